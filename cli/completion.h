/* cli/completion.h — `yao-sandbox completion bash|zsh`: the shell completion script,
 * generated from the command table itself (so it never lags behind the commands and
 * their flags): commands, each command's flags, the values of -o, --lifecycle, --phase,
 * --for, and Sandbox names from `yao-sandbox list -o name` in the namespace given by -n.
 * zsh runs the same functions through bashcompinit. Pure: text out. */
#ifndef YAO_CLI_COMPLETION_H
#define YAO_CLI_COMPLETION_H

#include <stddef.h>

#include "base/dynbuf.h"
#include "cli/cli.h"

/* Append the script for shell ("bash" or "zsh") to out. 0, or -1 for another shell (or
 * out of memory). */
int completion_script(const char *shell, const struct command *cmds, size_t ncmds, const struct opt *global,
                      struct dynbuf *out);

#endif
