/* sandbox/decide/volhelper_decide.h — whether a volume helper pod holds a Sandbox's workspace.
 *
 * Yao's Volume client (clients/go/yaovolume) reads and writes a stopped Sandbox's files
 * in a short-lived helper pod named yao-vol-<Sandbox uid> that mounts the workspace claim.
 * The sandbox pod must not start on the claim while it does (two writers on one claim):
 * the controller waits until the helper has ended or is gone. Pure: the I/O is in
 * volhelper.h. */
#ifndef YAO_SANDBOX_VOLHELPER_DECIDE_H
#define YAO_SANDBOX_VOLHELPER_DECIDE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The helper pod's name prefix and its component label (as the Go client sets them). */
#define SBX_VOLUME_HELPER_PREFIX "yao-vol-"
#define SBX_VOLUME_HELPER_COMPONENT "volume-helper"

/* The helper pod's name for a Sandbox uid into out; -1 when it does not fit. */
int sbx_volume_helper_name(const char *uid, char *out, size_t n);

/* 1 when pod is a volume helper of the Sandbox with this uid (an ownerReference to that
 * uid, the component label) whose containers may still write: not Succeeded or Failed (a
 * helper past its activeDeadlineSeconds is Failed and holds nothing). Being deleted still
 * holds: its container runs until the kubelet has stopped it. 0 otherwise (NULL too). */
int sbx_volume_helper_holds(const cJSON *pod, const char *uid);

#endif
