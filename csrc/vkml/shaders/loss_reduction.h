// The reduction codes of the loss kernels' `reduction` push constant (nll_loss_push.h,
// cross_entropy_push.h): vkml::ops::Reduction's values, which are PyTorch's.
#ifndef VKML_LOSS_REDUCTION_H
#define VKML_LOSS_REDUCTION_H
#define LOSS_REDUCTION_NONE 0
#define LOSS_REDUCTION_MEAN 1
#define LOSS_REDUCTION_SUM 2
#endif
