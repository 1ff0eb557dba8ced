"""Series functions over dynamic arrays: element-wise math, fills, filters, fits, decomposition."""
