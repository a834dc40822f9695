/* bridge/bridge_mcp.c — the grpc mode's translation between MCP JSON-RPC 2.0 (one message
 * per line on stdio) and the unary RPCs of yao.Yao, as pure functions: a request line in,
 * either a reply line or an RPC to make out; an RPC's result or failure in, a reply line
 * out. No I/O, no connection state (bridge_grpc.c and bridge_serve.c own those).
 *
 *   initialize      -> Healthz (the reply itself is local: protocol version, capabilities)
 *   ping            -> answered here
 *   tools/list      -> MCPListTools(session_id)              result {"tools": <tools>}
 *   tools/call      -> MCPCallTool(session_id, name, args)   result <result>
 *   resources/list  -> MCPListResources(session_id)          result {"resources": <resources>}
 *   resources/read  -> MCPReadResource(session_id, uri)      result {"contents": <contents>}
 *   notifications   -> nothing (no reply, no RPC)
 *
 * JSON the server sends is validated and compacted, never re-encoded: numbers and strings
 * reach the client byte for byte, and a reply is always exactly one line. */
#include "bridge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Protocol versions we answer with when the client asks for them; otherwise the newest. */
static const char *const versions[] = { "2025-06-18", "2025-03-26", "2024-11-05" };

#define JSONRPC_PARSE_ERROR      (-32700)
#define JSONRPC_INVALID_REQUEST  (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS   (-32602)
#define JSONRPC_INTERNAL_ERROR   (-32603)

const char *mcp_rpc_path(enum mcp_rpc rpc) {
    switch (rpc) {
    case MCP_RPC_HEALTHZ: return "/yao.Yao/Healthz";
    case MCP_RPC_LIST_TOOLS: return "/yao.Yao/MCPListTools";
    case MCP_RPC_CALL_TOOL: return "/yao.Yao/MCPCallTool";
    case MCP_RPC_LIST_RESOURCES: return "/yao.Yao/MCPListResources";
    case MCP_RPC_READ_RESOURCE: return "/yao.Yao/MCPReadResource";
    case MCP_RPC_HEARTBEAT: return "/yao.Yao/Heartbeat";
    }
    return "";
}

/* Append an error reply; id is JSON text or NULL for null. A reply that does not fit
 * leaves out unchanged and returns -1. */
int mcp_reply_error(struct bridge_dyn *out, const char *id, int code, const char *message,
                    int grpc_status) {
    size_t saved = BRIDGE_DYN_LEN(out);
    char nb[24];

    if (bridge_dyn_addf(out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":%d,\"message\":",
                        id ? id : "null", code) < 0 ||
        bjson_add_string(out, message, strlen(message)) < 0)
        goto fail;
    if (grpc_status >= 0 &&
        bridge_dyn_addf(out, ",\"data\":{\"grpcStatus\":%d,\"grpcCode\":\"%s\"}", grpc_status,
                        bgrpc_code_name(grpc_status, nb, sizeof nb)) < 0)
        goto fail;
    if (bridge_dyn_adds(out, "}}\n") < 0) goto fail;
    return 0;
fail:
    out->len = out->off + saved; /* live bytes keep their order if the buffer compacted */
    return -1;
}

/* The id as compact JSON text; only strings and numbers are ids (JSON-RPC 2.0 §4). */
static char *id_text(const char *vp, const char *ve) {
    struct bridge_dyn d;

    if (*vp != '"' && *vp != '-' && (*vp < '0' || *vp > '9')) return NULL;
    bridge_dyn_init(&d, (size_t)(ve - vp) + 1);
    if (bjson_compact(&d, vp, (size_t)(ve - vp)) < 0) {
        bridge_dyn_free(&d);
        return NULL;
    }
    return bridge_dyn_take(&d, NULL);
}

/* A string member of params, decoded; NULL when absent or not a valid string. */
static char *param_string(const char *pp, const char *pe, const char *key, size_t *len) {
    const char *vp, *ve;

    if (!pp || bjson_member(pp, pe, key, &vp, &ve) != 1) return NULL;
    return bjson_string(vp, ve, len);
}

/* Handle one stdin line; see bridge.h. */
int mcp_handle_line(const char *line, size_t n, const char *session_id, struct mcp_req *req,
                    struct bridge_dyn *out) {
    const char *end = line + n, *p = bjson_ws(line, end), *vp, *ve, *pp = NULL, *pe = NULL;
    size_t sid_len = strlen(session_id), mlen = 0, slen = 0;
    char *method = NULL, *s = NULL;
    int has_id, r = MCP_REPLIED;

    memset(req, 0, sizeof *req);
    bridge_dyn_init(&req->body, BRIDGE_MSG_MAX);
    if (p == end) return MCP_NONE;
    if (!bjson_valid(p, (size_t)(end - p)))
        return mcp_reply_error(out, NULL, JSONRPC_PARSE_ERROR, "parse error: not valid JSON", -1) < 0
                   ? -1 : MCP_REPLIED;
    if (*p != '{')
        return mcp_reply_error(out, NULL, JSONRPC_INVALID_REQUEST,
                               *p == '[' ? "invalid request: batches are not supported"
                                         : "invalid request: not an object", -1) < 0
                   ? -1 : MCP_REPLIED;
    has_id = bjson_member(p, end, "id", &vp, &ve) == 1;
    if (has_id && !(req->id = id_text(vp, ve))) {
        if (*vp == '"' || *vp == '-' || (*vp >= '0' && *vp <= '9')) return -1; /* ENOMEM */
        return mcp_reply_error(out, NULL, JSONRPC_INVALID_REQUEST,
                               "invalid request: id must be a string or a number", -1) < 0
                   ? -1 : MCP_REPLIED;
    }
    if (bjson_member(p, end, "method", &vp, &ve) != 1) {
        /* a response to a request of ours (we send none) or junk: answer only junk */
        if (bjson_member(p, end, "result", &vp, &ve) == 1 || bjson_member(p, end, "error", &vp, &ve) == 1) {
            r = MCP_NONE;
            goto out;
        }
        if (mcp_reply_error(out, req->id, JSONRPC_INVALID_REQUEST, "invalid request: no method", -1) < 0)
            r = -1;
        goto out;
    }
    method = bjson_string(vp, ve, &mlen);
    if (!method) {
        if (has_id && mcp_reply_error(out, req->id, JSONRPC_INVALID_REQUEST,
                                      "invalid request: method must be a string", -1) < 0)
            r = -1;
        r = has_id ? r : MCP_NONE;
        goto out;
    }
    if (!has_id) { /* a notification: initialized, cancelled, ... never answered */
        r = MCP_NONE;
        goto out;
    }
    if (bjson_member(p, end, "params", &pp, &pe) == 1 && *pp != '{') pp = pe = NULL;

    if (!strcmp(method, "ping")) {
        if (bridge_dyn_addf(out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", req->id) < 0) r = -1;
    } else if (!strcmp(method, "initialize")) {
        size_t i;
        s = param_string(pp, pe, "protocolVersion", &slen);
        strcpy(req->version, versions[0]);
        for (i = 0; s && i < sizeof versions / sizeof versions[0]; i++)
            if (!strcmp(s, versions[i])) strcpy(req->version, versions[i]);
        req->rpc = MCP_RPC_HEALTHZ;
        r = MCP_CALL;
    } else if (!strcmp(method, "tools/list") || !strcmp(method, "resources/list")) {
        req->rpc = method[0] == 't' ? MCP_RPC_LIST_TOOLS : MCP_RPC_LIST_RESOURCES;
        r = bpb_add_bytes(&req->body, 1, session_id, sid_len) < 0 ? -1 : MCP_CALL;
    } else if (!strcmp(method, "tools/call")) {
        s = param_string(pp, pe, "name", &slen);
        if (!s || !slen) {
            if (mcp_reply_error(out, req->id, JSONRPC_INVALID_PARAMS,
                                "invalid params: tools/call needs params.name (a string)", -1) < 0)
                r = -1;
            goto out;
        }
        req->rpc = MCP_RPC_CALL_TOOL;
        r = MCP_CALL;
        if (bpb_add_bytes(&req->body, 1, session_id, sid_len) < 0 ||
            bpb_add_bytes(&req->body, 2, s, slen) < 0)
            r = -1;
        if (r == MCP_CALL && bjson_member(pp, pe, "arguments", &vp, &ve) == 1) {
            struct bridge_dyn args;
            bridge_dyn_init(&args, BRIDGE_MSG_MAX);
            if (bjson_compact(&args, vp, (size_t)(ve - vp)) < 0 ||
                bpb_add_bytes(&req->body, 3, BRIDGE_DYN_PTR(&args), BRIDGE_DYN_LEN(&args)) < 0)
                r = -1;
            bridge_dyn_free(&args);
        }
    } else if (!strcmp(method, "resources/read")) {
        s = param_string(pp, pe, "uri", &slen);
        if (!s || !slen) {
            if (mcp_reply_error(out, req->id, JSONRPC_INVALID_PARAMS,
                                "invalid params: resources/read needs params.uri (a string)", -1) < 0)
                r = -1;
            goto out;
        }
        req->rpc = MCP_RPC_READ_RESOURCE;
        r = bpb_add_bytes(&req->body, 1, session_id, sid_len) < 0 ||
                    bpb_add_bytes(&req->body, 2, s, slen) < 0 ? -1 : MCP_CALL;
    } else {
        struct bridge_dyn m;
        bridge_dyn_init(&m, 300);
        if (bridge_dyn_adds(&m, "method not found: ") < 0 ||
            bridge_dyn_add(&m, method, mlen > 200 ? 200 : mlen) < 0 ||
            mcp_reply_error(out, req->id, JSONRPC_METHOD_NOT_FOUND, bridge_dyn_str(&m), -1) < 0)
            r = -1;
        bridge_dyn_free(&m);
    }
out:
    free(method);
    free(s);
    if (r != MCP_CALL) mcp_req_free(req);
    return r;
}

/* The MCP name of what an RPC returns, for messages. */
static const char *rpc_name(enum mcp_rpc rpc) {
    return mcp_rpc_path(rpc) + strlen("/yao.Yao/");
}

/* Append the reply for a successful RPC; see bridge.h. */
int mcp_reply_result(struct bridge_dyn *out, const struct mcp_req *req, const unsigned char *msg,
                     size_t n) {
    static const char *const wrap[] = { NULL, "tools", NULL, "resources", "contents", NULL };
    const unsigned char *v;
    const char *j, *je;
    size_t vn, saved = BRIDGE_DYN_LEN(out);
    char m[160];
    int r = bpb_get_bytes(msg, n, 1, &v, &vn);

    if (r < 0) {
        snprintf(m, sizeof m, "%s: the server's response is not a valid protobuf message", rpc_name(req->rpc));
        return mcp_reply_error(out, req->id, JSONRPC_INTERNAL_ERROR, m, -1);
    }
    if (req->rpc == MCP_RPC_HEALTHZ) {
        return bridge_dyn_addf(out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"%s\","
                               "\"capabilities\":{\"tools\":{},\"resources\":{}},"
                               "\"serverInfo\":{\"name\":\"yao-bridge\",\"version\":\"%s\"}}}\n",
                               req->id, req->version, YAO_VERSION);
    }
    j = (const char *)v;
    je = j + vn;
    if (vn == 0 && wrap[req->rpc]) { /* proto3 sends an empty list as no field at all */
        j = "[]";
        je = j + 2;
    }
    if (!bjson_valid(j, (size_t)(je - j))) {
        snprintf(m, sizeof m, "%s: the server's %s is not valid JSON", rpc_name(req->rpc),
                 req->rpc == MCP_RPC_CALL_TOOL ? "result" : wrap[req->rpc]);
        return mcp_reply_error(out, req->id, JSONRPC_INTERNAL_ERROR, m, -1);
    }
    j = bjson_ws(j, je);
    if (bridge_dyn_addf(out, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":", req->id) < 0) goto fail;
    /* A JSON array is the list itself (what Yao sends); an object is taken as the whole
     * MCP result. */
    if (wrap[req->rpc] && *j == '[' && bridge_dyn_addf(out, "{\"%s\":", wrap[req->rpc]) < 0) goto fail;
    if (bjson_compact(out, j, (size_t)(je - j)) < 0) goto fail;
    if (wrap[req->rpc] && *j == '[' && bridge_dyn_add(out, "}", 1) < 0) goto fail;
    if (bridge_dyn_adds(out, "}\n") < 0) goto fail;
    return 0;
fail:
    out->len = out->off + saved;
    snprintf(m, sizeof m, "%s: the reply is too large (%zu bytes of JSON)", rpc_name(req->rpc), vn);
    return mcp_reply_error(out, req->id, JSONRPC_INTERNAL_ERROR, m, -1);
}

/* Free what a request owns. */
void mcp_req_free(struct mcp_req *req) {
    free(req->id);
    req->id = NULL;
    bridge_dyn_free(&req->body);
}
