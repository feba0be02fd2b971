//! gpugraph algorithms.
