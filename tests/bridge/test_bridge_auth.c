/* tests/bridge/test_bridge_auth.c — the pure half of the yao-bridge token handshake:
 * the hello line's framing and escaping, the reply parser on accepted, refused and
 * invalid replies, and token loading from the environment and a file. No network. */
#include "bridge.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(what, cond) do { \
        if (cond) { passed++; printf("ok   %s\n", what); } \
        else { failed++; printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__); } \
    } while (0)

/* Parse s and return the verdict, copying the reason. */
static int parse(const char *s, char *reason, size_t cap) {
    return bridge_auth_parse_reply(s, strlen(s), reason, cap);
}

/* The hello line for a token, as a string (caller frees). */
static char *hello(const char *tok, size_t len) {
    size_t n;
    char *h = bridge_auth_hello(tok, len, &n);
    char *s = malloc(n + 1);
    memcpy(s, h, n);
    s[n] = '\0';
    free(h);
    return s;
}

static void test_hello(void) {
    char *h = hello("abc.DEF-123_~+/=", 16);
    CHECK("hello: plain token framed as one JSON line",
          !strcmp(h, "{\"yao-bridge\":1,\"token\":\"abc.DEF-123_~+/=\"}\n"));
    free(h);
    h = hello("a\"b\\c\nd\x01", 8);
    CHECK("hello: quote, backslash and control bytes are escaped",
          !strcmp(h, "{\"yao-bridge\":1,\"token\":\"a\\\"b\\\\c\\u000ad\\u0001\"}\n"));
    free(h);
}

static void test_reply(void) {
    char reason[64];

    CHECK("reply: canonical ack accepted", parse("{\"yao-bridge\":1,\"ok\":true}", reason, sizeof reason) == 1);
    CHECK("reply: Go map key order accepted", parse("{\"ok\":true,\"yao-bridge\":1}", reason, sizeof reason) == 1);
    CHECK("reply: whitespace and CR tolerated",
          parse("  { \"yao-bridge\" : 1 , \"ok\" : true }\r", reason, sizeof reason) == 1);
    CHECK("reply: unknown members (nested too) skipped",
          parse("{\"yao-bridge\":1,\"session\":{\"id\":[1,2,{\"a\":null}]},\"x\":-1.5e3,\"ok\":true}",
                reason, sizeof reason) == 1);
    CHECK("reply: refusal with reason",
          parse("{\"yao-bridge\":1,\"ok\":false,\"error\":\"invalid token\"}", reason, sizeof reason) == 0 &&
          !strcmp(reason, "invalid token"));
    CHECK("reply: refusal reason unescaped (\\u00e9, \\n)",
          parse("{\"yao-bridge\":1,\"ok\":false,\"error\":\"expir\\u00e9\\n\"}", reason, sizeof reason) == 0 &&
          !strcmp(reason, "expir\xc3\xa9\n"));
    CHECK("reply: refusal without reason", parse("{\"yao-bridge\":1,\"ok\":false}", reason, sizeof reason) == 0 &&
          reason[0] == '\0');
    CHECK("reply: long reason truncated, not overflowed",
          parse("{\"yao-bridge\":1,\"ok\":false,\"error\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
                reason, 8) == 0 && strlen(reason) == 7);
    CHECK("reply: a JSON-RPC error from a plain MCP server is not an ack",
          parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}",
                reason, sizeof reason) == -1);
    CHECK("reply: missing version rejected", parse("{\"ok\":true}", reason, sizeof reason) == -1);
    CHECK("reply: other version rejected", parse("{\"yao-bridge\":2,\"ok\":true}", reason, sizeof reason) == -1);
    CHECK("reply: missing ok rejected", parse("{\"yao-bridge\":1}", reason, sizeof reason) == -1);
    CHECK("reply: ok as string rejected", parse("{\"yao-bridge\":1,\"ok\":\"true\"}", reason, sizeof reason) == -1);
    CHECK("reply: trailing garbage rejected", parse("{\"yao-bridge\":1,\"ok\":true}x", reason, sizeof reason) == -1);
    CHECK("reply: truncated object rejected", parse("{\"yao-bridge\":1,\"ok\":true", reason, sizeof reason) == -1);
    CHECK("reply: not JSON rejected", parse("HTTP/1.1 400 Bad Request", reason, sizeof reason) == -1);
    CHECK("reply: empty line rejected", parse("", reason, sizeof reason) == -1);
    CHECK("reply: deep nesting rejected, no recursion blow-up",
          parse("{\"yao-bridge\":1,\"ok\":true,\"x\":[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]}",
                reason, sizeof reason) == -1);
}

static void test_token_load(void) {
    struct bridge_err err = { 0, "" };
    char path[] = "/tmp/yao-bridge-token-XXXXXX";
    char *tok = NULL;
    size_t len = 0;
    int fd, r;

    unsetenv("YAO_TOKEN");
    unsetenv("YAO_TOKEN_FILE");
    CHECK("token: none configured -> 0", bridge_auth_token_load(&tok, &len, &err) == 0 && !tok);

    fd = mkstemp(path);
    if (write(fd, "s3cr3t.tok\n\n", 12) != 12) perror("write");
    close(fd);
    setenv("YAO_TOKEN_FILE", path, 1);
    r = bridge_auth_token_load(&tok, &len, &err);
    CHECK("token: file read, trailing newlines stripped", r == 1 && len == 10 && !strcmp(tok, "s3cr3t.tok"));
    bridge_auth_token_free(tok, len);

    setenv("YAO_TOKEN", "from-env", 1);
    r = bridge_auth_token_load(&tok, &len, &err);
    CHECK("token: YAO_TOKEN wins over YAO_TOKEN_FILE", r == 1 && !strcmp(tok, "from-env"));
    bridge_auth_token_free(tok, len);
    unsetenv("YAO_TOKEN");

    fd = open(path, O_WRONLY | O_TRUNC);
    if (write(fd, " \n", 2) != 2) perror("write");
    close(fd);
    r = bridge_auth_token_load(&tok, &len, &err);
    CHECK("token: empty file is a usage error", r == -1 && err.code == BRIDGE_EXIT_USAGE &&
          strstr(err.msg, "is empty"));
    err.code = 0;

    unlink(path);
    r = bridge_auth_token_load(&tok, &len, &err);
    CHECK("token: missing file is a usage error naming it", r == -1 && strstr(err.msg, path) &&
          strstr(err.msg, "No such file"));
    unsetenv("YAO_TOKEN_FILE");
}

int main(void) {
    test_hello();
    test_reply();
    test_token_load();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
