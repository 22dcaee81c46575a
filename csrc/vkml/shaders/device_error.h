// The device error record: checks that depend on tensor values (a class target out
// of range, an integer division by zero) run in the kernels, which note the first
// failure in a small host-visible record of their device; the host raises it as
// PyTorch's CPU would at its next read of the device (runtime/device_errors.h).
// Shared by C++ and GLSL (device_error.glsl).
#ifndef VKML_DEVICE_ERROR_H
#define VKML_DEVICE_ERROR_H

// Record layout: code (uint32), aux (uint32), value (int64), bound (int64).
#define DEVICE_ERROR_RECORD_BYTES 24

// IndexError "Target <value> is out of bounds." (nll_loss, cross_entropy)
#define DEVICE_ERROR_TARGET 1
// RuntimeError "ZeroDivisionError" (integer div, floor_divide, remainder, fmod)
#define DEVICE_ERROR_ZERO_DIVISION 2
// RuntimeError "Class values must be non-negative." (one_hot)
#define DEVICE_ERROR_ONE_HOT_NEGATIVE 3
// RuntimeError "Class values must be smaller than num_classes." (one_hot)
#define DEVICE_ERROR_ONE_HOT_CLASSES 4
// RuntimeError "offsets[0] has to be 0, ... However, got <value>" (embedding_bag)
#define DEVICE_ERROR_BAG_FIRST_OFFSET 5
// RuntimeError "offsets[-1] can not be greater than input's length <bound> but got
// offsets[-1] of <value>" (embedding_bag)
#define DEVICE_ERROR_BAG_LAST_OFFSET 6
// RuntimeError "probability tensor contains either `inf`, `nan` or element < 0"
#define DEVICE_ERROR_MULTINOMIAL_PROBABILITY 7
// RuntimeError "invalid multinomial distribution (sum of probabilities <= 0)"
#define DEVICE_ERROR_MULTINOMIAL_SUM 8
// Index checks (index_select, gather, scatter, indexing, take, embedding, ...):
// IndexError "index out of range in self"
#define DEVICE_ERROR_INDEX_IN_SELF 9
// RuntimeError "index <value> is out of bounds for dimension <aux> with size <bound>"
#define DEVICE_ERROR_INDEX_BOUNDS 10
// IndexError, the same words
#define DEVICE_ERROR_INDEX_BOUNDS_INDEX_ERROR 11
// IndexError "out of range: tried to access index <value> on a tensor of <bound> elements."
#define DEVICE_ERROR_INDEX_TAKE 12
// RuntimeError "target out of range" (multi_margin_loss)
#define DEVICE_ERROR_MULTI_MARGIN_TARGET 13
// RuntimeError "argument #2 'target' is out of range" (multilabel_margin_loss)
#define DEVICE_ERROR_MULTILABEL_MARGIN_TARGET 14
// RuntimeError "invalid Poisson rate, expected rate to be non-negative" (poisson)
#define DEVICE_ERROR_POISSON_RATE 15
// RuntimeError "`zero_point` must be between `quant_min` and `quant_max`." (fake quantize)
#define DEVICE_ERROR_FAKE_QUANT_ZERO_POINT 16
// RuntimeError with the message registered as <aux> (register_assert_message):
// torch._assert_async's check of a one-element tensor found zero
#define DEVICE_ERROR_ASSERT 17

#endif
