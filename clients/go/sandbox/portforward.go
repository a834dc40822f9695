package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward forwards 127.0.0.1:localPort (0: a free port) to remotePort of the
// sandbox's container through the API server (pods/portforward), like kubectl
// port-forward, and returns the local port bound. A stopped sandbox is started first
// (unless it cannot be); while the forward lasts the sandbox is marked used (Heartbeat).
// The forward ends when ctx ends. Each local connection is its own stream. When the pod
// reports an error for one (nobody listens on remotePort), client-go closes its whole
// connection to the pod, as kubectl does: the forward ends (the local port is closed, the
// error goes to runtime.HandleError) and PortForward must be called again.
//
// The transport is the same as kubectl's: SPDY tunneled over a WebSocket
// (portforward.k8s.io through the API server, Kubernetes >= 1.30), falling back to plain
// SPDY when the server does not upgrade to it.
func (c *Client) PortForward(ctx context.Context, name string, localPort, remotePort int) (int, error) {
	if localPort < 0 || localPort > 65535 || remotePort < 1 || remotePort > 65535 {
		return 0, fmt.Errorf("port-forward: ports out of range (local %d, remote %d)", localPort, remotePort)
	}
	sb, err := c.EnsureRunning(ctx, name)
	if err != nil {
		return 0, err
	}
	pod := sb.Status.PodName
	if pod == "" {
		return 0, fmt.Errorf("port-forward: sandbox %q has no pod", name)
	}
	req := c.core.Post().Namespace(c.namespace).Resource("pods").Name(pod).SubResource("portforward")
	u := req.URL()
	tunnel, err := portforward.NewSPDYOverWebsocketDialer(u, c.config)
	if err != nil {
		return 0, fmt.Errorf("port-forward: %w", err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(c.config)
	if err != nil {
		return 0, fmt.Errorf("port-forward: %w", err)
	}
	plain := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	dialer := portforward.NewFallbackDialer(tunnel, plain, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})

	stopCh := make(chan struct{})
	readyCh := make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"},
		[]string{fmt.Sprintf("%d:%d", localPort, remotePort)}, stopCh, readyCh, io.Discard, io.Discard)
	if err != nil {
		return 0, fmt.Errorf("port-forward: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-readyCh:
	case err := <-done:
		if err == nil {
			err = errors.New("ended before it was ready")
		}
		return 0, fmt.Errorf("port-forward to sandbox %q port %d: %w", name, remotePort, err)
	case <-ctx.Done():
		close(stopCh)
		<-done
		return 0, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stopCh)
		<-done
		return 0, fmt.Errorf("port-forward: no local port bound: %v", err)
	}
	stopBeat := c.Heartbeat(context.WithoutCancel(ctx), name, nil)
	go func() {
		select {
		case <-ctx.Done():
			close(stopCh)
			<-done
		case <-done:
		}
		stopBeat()
	}()
	return int(ports[0].Local), nil
}
