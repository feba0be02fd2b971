//! gpugraph tables.
