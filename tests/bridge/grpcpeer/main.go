// tests/bridge/grpcpeer — a real grpc-go server for yao-bridge's grpc mode tests: the
// yao.Yao service of yao.proto (generated code in pb/, made by build.sh), with the
// behaviour of Yao's own server where the bridge depends on it:
//
//   - every method but Healthz needs "authorization: Bearer <token>" (else UNAUTHENTICATED);
//   - session_id selects the MCP client; an unknown one is NOT_FOUND ("MCP client not found");
//   - token rotation: with -rotate-after N the Nth authenticated call is answered with new
//     tokens in the response headers (x-access-token, x-refresh-token); from then on only
//     the new access token is accepted, as when Yao refreshed an expired one.
//
// Tools: echo (the arguments back as text), big {"mb":N} (N MiB of text), sleep {"ms":N},
// fail {"code":N,"message":S} (that gRPC status). -die-on TOOL makes the process exit the
// moment that tool is called, without answering. Every call is recorded as one JSON line
// (method, metadata, request fields, the client's address and deadline, when it arrived) in
// -record.
//
// Heartbeat answers "ok" — or "shutdown" once the file named by -shutdown-file exists (the
// test creates it when it wants Yao to stop the sandbox); -heartbeat unimplemented answers
// UNIMPLEMENTED as a Yao server from before Heartbeat does.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"yao-sandbox/tests/bridge/grpcpeer/pb"
)

var (
	listen      = flag.String("listen", "127.0.0.1:0", "address to listen on")
	ready       = flag.String("ready", "", "file to write the port to once listening")
	certFile    = flag.String("cert", "", "TLS certificate (PEM); plaintext h2c without it")
	keyFile     = flag.String("key", "", "TLS key (PEM)")
	token       = flag.String("token", "tok-1", "the access token accepted")
	refresh     = flag.String("refresh", "ref-1", "the refresh token a rotation builds on (<refresh>-r1)")
	session     = flag.String("session", "sbx-1", "the session_id that names an MCP client")
	rotateAfter = flag.Int("rotate-after", 0, "rotate the tokens on this authenticated call (0: never)")
	dieOn       = flag.String("die-on", "", "exit the process when this tool is called")
	record      = flag.String("record", "", "append one JSON line per call to this file")
	health      = flag.String("healthz", "SERVING", "the status Healthz answers")
	shutdownAt  = flag.String("shutdown-file", "", "answer heartbeats \"shutdown\" once this file exists")
	heartbeat   = flag.String("heartbeat", "ok", "ok, or unimplemented (a server without Heartbeat)")
)

type server struct {
	pb.UnimplementedYaoServer
	mu      sync.Mutex
	calls   int
	current string // the access token accepted now
	rec     *os.File
}

// call is one recorded call.
type call struct {
	Method     string              `json:"method"`
	Metadata   map[string][]string `json:"metadata"`
	Peer       string              `json:"peer"`
	DeadlineMs int64               `json:"deadline_ms"`
	SessionID  string              `json:"session_id,omitempty"`
	Tool       string              `json:"tool,omitempty"`
	Arguments  string              `json:"arguments,omitempty"`
	URI        string              `json:"uri,omitempty"`
	Status     string              `json:"status"`
	AtMs       int64               `json:"at_ms"` // unix time it arrived, milliseconds
	// Heartbeat
	SandboxID    *string `json:"sandbox_id,omitempty"`
	CPUPercent   *int32  `json:"cpu_percent,omitempty"`
	MemBytes     *int64  `json:"mem_bytes,omitempty"`
	RunningProcs *int32  `json:"running_procs,omitempty"`
	Action       string  `json:"action,omitempty"`
}

func (s *server) write(c *call) {
	if s.rec == nil {
		return
	}
	line, _ := json.Marshal(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Write(append(line, '\n'))
}

// intercept records every call and checks the token on all but Healthz.
func (s *server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	c := &call{Method: info.FullMethod, Metadata: map[string][]string(md), AtMs: time.Now().UnixMilli()}
	if p, ok := peer.FromContext(ctx); ok {
		c.Peer = p.Addr.String()
	}
	if dl, ok := ctx.Deadline(); ok {
		c.DeadlineMs = time.Until(dl).Milliseconds()
	}
	switch r := req.(type) {
	case *pb.MCPListRequest:
		c.SessionID = r.SessionId
	case *pb.MCPCallRequest:
		c.SessionID, c.Tool, c.Arguments = r.SessionId, r.Tool, string(r.Arguments)
	case *pb.MCPResourceRequest:
		c.SessionID, c.URI = r.SessionId, r.Uri
	case *pb.HeartbeatRequest:
		id, cpu, mem, procs := r.SandboxId, r.CpuPercent, r.MemBytes, r.RunningProcs
		c.SandboxID, c.CPUPercent, c.MemBytes, c.RunningProcs = &id, &cpu, &mem, &procs
	}
	resp, err := s.authorize(ctx, md, info.FullMethod)
	if err == nil {
		if c.Tool != "" && c.Tool == *dieOn {
			c.Status = "died"
			s.write(c)
			os.Exit(0)
		}
		resp, err = handler(ctx, req)
	}
	if hr, ok := resp.(*pb.HeartbeatResponse); ok && err == nil {
		c.Action = hr.Action
	}
	c.Status = status.Code(err).String()
	s.write(c)
	return resp, err
}

// authorize checks the bearer token and rotates the tokens on the -rotate-after'th call.
func (s *server) authorize(ctx context.Context, md metadata.MD, method string) (any, error) {
	if method == "/yao.Yao/Healthz" {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := md.Get("authorization")
	if len(auth) != 1 || auth[0] != "Bearer "+s.current {
		return nil, status.Error(codes.Unauthenticated, "invalid token")
	}
	s.calls++
	if s.calls == *rotateAfter {
		s.current = *token + "-r1"
		grpc.SetHeader(ctx, metadata.Pairs("x-access-token", s.current,
			"x-refresh-token", *refresh+"-r1"))
	}
	return nil, nil
}

func (s *server) checkSession(id string) error {
	if id != *session {
		return status.Errorf(codes.NotFound, "MCP client not found: %s", id)
	}
	return nil
}

func (s *server) Healthz(ctx context.Context, _ *pb.Empty) (*pb.HealthzResponse, error) {
	return &pb.HealthzResponse{Status: *health}, nil
}

func (s *server) Heartbeat(ctx context.Context, r *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	if *heartbeat == "unimplemented" {
		return s.UnimplementedYaoServer.Heartbeat(ctx, r)
	}
	if *shutdownAt != "" {
		if _, err := os.Stat(*shutdownAt); err == nil {
			return &pb.HeartbeatResponse{Action: "shutdown"}, nil
		}
	}
	return &pb.HeartbeatResponse{Action: "ok"}, nil
}

var tools = []map[string]any{
	{"name": "echo", "description": "Echo the arguments <as text> & more",
		"inputSchema": map[string]any{"type": "object"}},
	{"name": "big", "description": "N MiB of text", "inputSchema": map[string]any{
		"type": "object", "properties": map[string]any{"mb": map[string]any{"type": "integer"}}}},
}

func (s *server) MCPListTools(ctx context.Context, r *pb.MCPListRequest) (*pb.MCPListResponse, error) {
	if err := s.checkSession(r.SessionId); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(tools)
	return &pb.MCPListResponse{Tools: b}, nil
}

func textResult(text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]any{{"type": "text", "text": text}}, "isError": false})
	return b
}

// BigText is the text of the big tool: "yao-bridge 0000001\n"-style lines up to n bytes.
func bigText(n int) string {
	var sb strings.Builder
	sb.Grow(n + 32)
	for i := 0; sb.Len() < n; i++ {
		fmt.Fprintf(&sb, "yao-bridge %07d\n", i)
	}
	return sb.String()[:n]
}

func (s *server) MCPCallTool(ctx context.Context, r *pb.MCPCallRequest) (*pb.MCPCallResponse, error) {
	if err := s.checkSession(r.SessionId); err != nil {
		return nil, err
	}
	var args struct {
		MB      int    `json:"mb"`
		Ms      int    `json:"ms"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if len(r.Arguments) > 0 {
		if err := json.Unmarshal(r.Arguments, &args); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "invalid arguments JSON: %v", err)
		}
	}
	switch r.Tool {
	case "echo":
		return &pb.MCPCallResponse{Result: textResult(string(r.Arguments))}, nil
	case "big":
		return &pb.MCPCallResponse{Result: textResult(bigText(args.MB << 20))}, nil
	case "sleep":
		select {
		case <-time.After(time.Duration(args.Ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &pb.MCPCallResponse{Result: textResult("slept")}, nil
	case "fail":
		return nil, status.Error(codes.Code(args.Code), args.Message)
	}
	return nil, status.Errorf(codes.Internal, "CallTool failed: tool %s not found", r.Tool)
}

func (s *server) MCPListResources(ctx context.Context, r *pb.MCPListRequest) (*pb.MCPResourcesResponse, error) {
	if err := s.checkSession(r.SessionId); err != nil {
		return nil, err
	}
	b, _ := json.Marshal([]map[string]any{
		{"uri": "yao://docs/readme", "name": "readme", "mimeType": "text/plain"}})
	return &pb.MCPResourcesResponse{Resources: b}, nil
}

func (s *server) MCPReadResource(ctx context.Context, r *pb.MCPResourceRequest) (*pb.MCPResourceResponse, error) {
	if err := s.checkSession(r.SessionId); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(r.Uri, "yao://docs/") {
		return nil, status.Errorf(codes.NotFound, "resource %s not found", r.Uri)
	}
	b, _ := json.Marshal([]map[string]any{
		{"uri": r.Uri, "mimeType": "text/plain", "text": "contents of " + r.Uri + " \u2713"}})
	return &pb.MCPResourceResponse{Contents: b}, nil
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("grpcpeer: ")
	s := &server{current: *token}
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		s.rec = f
	}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(s.intercept), grpc.MaxRecvMsgSize(64 << 20)}
	if *certFile != "" {
		creds, err := credentials.NewServerTLSFromFile(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	gs := grpc.NewServer(opts...)
	pb.RegisterYaoServer(gs, s)
	if *ready != "" {
		port := fmt.Sprint(lis.Addr().(*net.TCPAddr).Port)
		if err := os.WriteFile(*ready+".tmp", []byte(port), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*ready+".tmp", *ready); err != nil {
			log.Fatal(err)
		}
	}
	log.Fatal(gs.Serve(lis))
}
