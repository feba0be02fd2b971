//! Workflows: application outcomes built from algorithms (the spec's fourth level, above
//! kernels and algorithms, below scheduling). A workflow takes named inputs and a spec,
//! builds ONE command graph of library primitives and expression kernels, and decodes its
//! small results into a typed value.
//!
//! Why here and not in gpugraph-gpgpu: a workflow's row predicates and conversions are
//! expression-language kernels ([`crate::expr`]), and gpgpu sits below the program layer
//! (DESIGN.md's arrows: program uses command, tables, gpgpu), so gpgpu cannot reach them.
//! A crate of its own would hold one module with exactly this crate's dependencies.

pub mod analyze;
