#!/usr/bin/env bash
# CLI: --dim names are checked against the model (defect 10). A typo is an
# error listing the model's symbolic dims with a suggestion; the aliases
# batch / sequence stay valid while the model has a dim of that kind;
# --batch on an ONNX model points to --dim batch=N.
. "$(dirname "$0")/lib/common.sh"

# --batch with an ONNX path: a usage error with the right option (no data
# needed: options are checked before the file is read).
expect_error plan model.onnx --batch 8
err_has "--dim batch=8"

# The repository's own example model (symbolic dim 'batch' only): runs in
# every clone.
EX="$NNMEM_SOURCE_DIR/examples/models/mnist_cnn.onnx"
expect_error plan "$EX" --dim bacth=8
err_has "unknown dim 'bacth' (symbolic dims of the model: batch)"
err_has "did you mean 'batch'?"
expect_error inspect "$EX" --dim nonsense=3
err_has "unknown dim 'nonsense'"
expect_rc 0 plan "$EX" --dim batch=4 --quiet
#    a name bound twice: only one binding can apply; say so (it used to read
#    "unknown dim 'batch' ...; did you mean 'batch'?")
expect_error plan "$EX" --dim batch=4 --dim batch=5
err_has "dim 'batch' is bound twice (batch=4 and batch=5)"
expect_error plan "$EX" --dim sequence=4
err_has "binds nothing"

[ -n "${NNMEM_DATA_DIR:-}" ] || skip "NNMEM_DATA_DIR not set"
BERT="$NNMEM_DATA_DIR/models/tiny_BertForQuestionAnswering_pt14_opset10.onnx"
MNIST="$NNMEM_DATA_DIR/models/mnist-8.onnx"
[ -f "$BERT" ] && [ -f "$MNIST" ] || skip "models absent"

expect_error plan "$BERT" --dim bacth=8
err_has "unknown dim 'bacth'"
err_has "batch_size, max_seq_len"
err_has "did you mean 'batch'?"
expect_error plan "$BERT" --dim max_seq_lne=64
err_has "did you mean 'max_seq_len'?"
expect_error inspect "$BERT" --dim nonsense=3
err_has "unknown dim 'nonsense'"
expect_rc 0 plan "$BERT" --dim batch=8 --dim sequence=64 --quiet
expect_rc 0 plan "$BERT" --dim batch_size=2 --dim max_seq_len=64 --quiet
expect_rc 0 plan "$BERT" --dim batch=8 --dim batch_size=2 --quiet
# mnist has no symbolic dims: even the alias binds nothing
expect_error plan "$MNIST" --dim batch=2
err_has "binds nothing"

finish
