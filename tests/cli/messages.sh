#!/usr/bin/env bash
# CLI: user messages never start with an internal module name ("zoo:",
# "liveness:", "replay:"): they say what went wrong in the user's words.
. "$(dirname "$0")/lib/common.sh"

# no_module_prefix: stderr names no internal module as a prefix
no_module_prefix() {
  grep -qE '(^|: )(zoo|liveness|replay|arena|pool|schedule|check): ' \
    "$T/stderr" && fail "an internal module name reaches the user"
  return 0
}

expect_error plan --model nope
err_has "unknown built-in model 'nope' (known: resnet50, mobilenetv2, bert-base)"
no_module_prefix

# the same with a batch size given
expect_error plan --model nope --batch 2
err_has "unknown built-in model 'nope'"
no_module_prefix

finish
