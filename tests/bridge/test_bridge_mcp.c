/* tests/bridge/test_bridge_mcp.c — the pure half of yao-bridge's grpc mode: the JSON
 * scanner (validation, compaction, member lookup, string decoding and writing), the
 * proto3 encoder/decoder and gRPC helpers, and the MCP request -> RPC mapping. No network;
 * the end-to-end behaviour against a real grpc-go server is in bridge_tests.py. */
#include "bridge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(what, cond) do { \
        if (cond) { passed++; printf("ok   %s\n", what); } \
        else { failed++; printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__); } \
    } while (0)

static int valid(const char *s) { return bjson_valid(s, strlen(s)); }

static void test_valid(void) {
    static const char *good[] = { "0", "-0.5e+10", "\"a\\u00e9\\n\"", "[]", "{}", " [1, {\"a\":[null,true,false]}] ",
                                  "12345678901234567890", "{\"a\":1,\"a\":2}" };
    static const char *bad[] = { "", "01", "1.", "-", "[1,]", "{\"a\"}", "{\"a\":1,}", "\"\\x\"", "\"a\nb\"",
                                 "[1] 2", "nul", "{1:2}", "\"\\u12g4\"", "[" };
    char deep[BJSON_MAX_DEPTH * 2 + 3];
    size_t i;
    int ok = 1;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) ok &= valid(good[i]);
    CHECK("json: valid documents accepted", ok);
    ok = 1;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) ok &= !valid(bad[i]);
    CHECK("json: invalid documents refused", ok);
    memset(deep, '[', BJSON_MAX_DEPTH);
    memset(deep + BJSON_MAX_DEPTH, ']', BJSON_MAX_DEPTH);
    deep[BJSON_MAX_DEPTH * 2] = '\0';
    CHECK("json: nesting up to the depth limit accepted", valid(deep));
    memmove(deep + 1, deep, BJSON_MAX_DEPTH * 2 + 1);
    deep[0] = '[';
    strcat(deep, "]");
    CHECK("json: nesting past the depth limit refused", !valid(deep));
}

static void test_compact_member_string(void) {
    struct bridge_dyn d;
    const char *doc = "{ \"a b\" : [ 1 , \"x y\\\" z\" ],\n \"k\\u0065y\" : { } , \"n\":123456789012345678901 }";
    const char *vp, *ve;
    char *s;
    size_t n;

    bridge_dyn_init(&d, 1024);
    CHECK("json: compact keeps strings and numbers, drops whitespace",
          bjson_compact(&d, doc, strlen(doc)) == 0 &&
          !strcmp(bridge_dyn_str(&d), "{\"a b\":[1,\"x y\\\" z\"],\"k\\u0065y\":{},\"n\":123456789012345678901}"));
    bridge_dyn_free(&d);
    CHECK("json: member found by its escaped key", bjson_member(doc, doc + strlen(doc), "key", &vp, &ve) == 1 &&
          ve - vp == 3 && !memcmp(vp, "{ }", 3));
    CHECK("json: absent member", bjson_member(doc, doc + strlen(doc), "zz", &vp, &ve) == 0);
    CHECK("json: member of a non-object", bjson_member("[1]", "[1]" + 3, "a", &vp, &ve) == -1);
    doc = "\"\\ud83d\\ude00 \\u00e9\\t\\\"\"";
    s = bjson_string(doc, doc + strlen(doc), &n);
    CHECK("json: string decodes surrogate pairs and escapes",
          s && n == 9 && !memcmp(s, "\xF0\x9F\x98\x80 \xC3\xA9\t\"", 9));
    free(s);
    doc = "\"\\ud83d\"";
    CHECK("json: lone surrogate refused", !bjson_string(doc, doc + strlen(doc), &n));
    doc = "\"a\\u0000b\"";
    CHECK("json: NUL refused", !bjson_string(doc, doc + strlen(doc), &n));
    doc = "\"\xC3\x28\"";
    CHECK("json: invalid UTF-8 refused", !bjson_string(doc, doc + strlen(doc), &n));
    bridge_dyn_init(&d, 1024);
    CHECK("json: string literal escapes and repairs UTF-8",
          bjson_add_string(&d, "q\"\\\n\x01\xff\xC3\xA9", 8) == 0 &&
          !strcmp(bridge_dyn_str(&d), "\"q\\\"\\\\\\n\\u0001\xEF\xBF\xBD\xC3\xA9\""));
    bridge_dyn_free(&d);
}

static void test_pb(void) {
    struct bridge_dyn d;
    const unsigned char *v;
    size_t vn;
    char big[300], buf[32];
    /* field 2 varint 150, field 1 "hi", field 4 fixed64, field 1 again "yo" (last wins) */
    static const unsigned char msg[] = { 0x10, 0x96, 0x01, 0x0a, 2, 'h', 'i', 0x21, 1, 2, 3, 4, 5, 6, 7, 8,
                                         0x0a, 2, 'y', 'o' };

    bridge_dyn_init(&d, 1024);
    memset(big, 'x', sizeof big);
    CHECK("pb: length-delimited field with a 2-byte length",
          bpb_add_bytes(&d, 3, big, sizeof big) == 0 && BRIDGE_DYN_LEN(&d) == 303 &&
          !memcmp(BRIDGE_DYN_PTR(&d), "\x1a\xac\x02", 3));
    CHECK("pb: empty field left out (proto3)", bpb_add_bytes(&d, 1, "", 0) == 0 && BRIDGE_DYN_LEN(&d) == 303);
    CHECK("pb: decode finds the field back", bpb_get_bytes(BRIDGE_DYN_PTR(&d), BRIDGE_DYN_LEN(&d), 3, &v, &vn) == 1 &&
          vn == sizeof big);
    bridge_dyn_free(&d);
    CHECK("pb: other wire types skipped, last occurrence wins",
          bpb_get_bytes(msg, sizeof msg, 1, &v, &vn) == 1 && vn == 2 && !memcmp(v, "yo", 2));
    CHECK("pb: absent field", bpb_get_bytes(msg, sizeof msg, 5, &v, &vn) == 0);
    CHECK("pb: truncated message refused", bpb_get_bytes(msg, 6, 1, &v, &vn) == -1);
    CHECK("grpc: code names", !strcmp(bgrpc_code_name(16, buf, sizeof buf), "UNAUTHENTICATED") &&
          !strcmp(bgrpc_code_name(42, buf, sizeof buf), "CODE_42"));
    strcpy(buf, "a%20b%zz%C3%A9%");
    CHECK("grpc: grpc-message percent-decoding", bgrpc_percent_decode(buf, strlen(buf)) == 9 &&
          !strcmp(buf, "a b%zz\xC3\xA9%"));
    bgrpc_timeout_header(buf, sizeof buf, 120000);
    CHECK("grpc: timeout header in ms", !strcmp(buf, "120000m"));
    bgrpc_timeout_header(buf, sizeof buf, 86400000LL * 2);
    CHECK("grpc: long timeout in seconds (8 digits at most)", !strcmp(buf, "172800S"));
}

/* Run one line; returns the action and leaves the reply (if any) in out. */
static int handle(const char *line, struct mcp_req *req, struct bridge_dyn *out) {
    bridge_dyn_free(out);
    return mcp_handle_line(line, strlen(line), "sbx-1", req, out);
}

static void test_mcp(void) {
    struct bridge_dyn out;
    struct mcp_req req;
    static const unsigned char call_body[] = "\x0a\x05sbx-1\x12\x04" "echo" "\x1a\x07{\"a\":1}";
    static const unsigned char tools[] = "\x0a\x09[{\"n\":1}]";
    int r;

    bridge_dyn_init(&out, 1 << 20);
    r = handle("{\"jsonrpc\":\"2.0\",\"id\":\"x 1\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
               "\"arguments\":{ \"a\" : 1 }}}", &req, &out);
    CHECK("mcp: tools/call -> MCPCallTool with session, tool and compact arguments",
          r == MCP_CALL && req.rpc == MCP_RPC_CALL_TOOL && !strcmp(req.id, "\"x 1\"") &&
          BRIDGE_DYN_LEN(&req.body) == sizeof call_body - 1 &&
          !memcmp(BRIDGE_DYN_PTR(&req.body), call_body, sizeof call_body - 1));
    mcp_req_free(&req);
    r = handle("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}", &req, &out);
    CHECK("mcp: tools/list -> MCPListTools", r == MCP_CALL && req.rpc == MCP_RPC_LIST_TOOLS);
    CHECK("mcp: a JSON array of tools is wrapped",
          mcp_reply_result(&out, &req, tools, sizeof tools - 1) == 0 &&
          !strcmp(bridge_dyn_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"tools\":[{\"n\":1}]}}\n"));
    bridge_dyn_free(&out);
    CHECK("mcp: a result that is not JSON becomes an error",
          mcp_reply_result(&out, &req, (const unsigned char *)"\x0a\x02[x", 4) == 0 &&
          strstr(bridge_dyn_str(&out), "\"code\":-32603") && strstr(bridge_dyn_str(&out), "not valid JSON"));
    mcp_req_free(&req);
    r = handle("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\"}}",
               &req, &out);
    CHECK("mcp: initialize -> Healthz, answering the client's known version",
          r == MCP_CALL && req.rpc == MCP_RPC_HEALTHZ && !strcmp(req.version, "2024-11-05") &&
          BRIDGE_DYN_LEN(&req.body) == 0);
    mcp_req_free(&req);
    r = handle("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1999\"}}",
               &req, &out);
    CHECK("mcp: initialize with an unknown version answers the newest",
          r == MCP_CALL && !strcmp(req.version, "2025-06-18"));
    mcp_req_free(&req);
    CHECK("mcp: ping answered locally", handle("{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"ping\"}", &req, &out) ==
          MCP_REPLIED && !strcmp(bridge_dyn_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":-3,\"result\":{}}\n"));
    CHECK("mcp: notification ignored", handle("{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}", &req, &out) ==
          MCP_NONE && BRIDGE_DYN_LEN(&out) == 0);
    CHECK("mcp: a client's response ignored", handle("{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}", &req, &out) ==
          MCP_NONE && BRIDGE_DYN_LEN(&out) == 0);
    CHECK("mcp: blank line ignored", handle("  ", &req, &out) == MCP_NONE);
    CHECK("mcp: unknown method -> -32601", handle("{\"id\":2,\"method\":\"x/y\"}", &req, &out) == MCP_REPLIED &&
          !strcmp(bridge_dyn_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":"
                  "\"method not found: x/y\"}}\n"));
    CHECK("mcp: RPC error reply carries the gRPC status",
          (bridge_dyn_free(&out), mcp_reply_error(&out, "9", MCP_ERR_RPC, "MCPCallTool: NOT_FOUND: \"t\"", 5)) == 0 &&
          !strcmp(bridge_dyn_str(&out), "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32000,\"message\":"
                  "\"MCPCallTool: NOT_FOUND: \\\"t\\\"\",\"data\":{\"grpcStatus\":5,\"grpcCode\":\"NOT_FOUND\"}}}\n"));
    bridge_dyn_free(&out);
}

int main(void) {
    test_valid();
    test_compact_member_string();
    test_pb();
    test_mcp();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
