//! A value built from the buffers a node binds (bind groups, sets of them), rebuilt only when
//! those buffers change: one type for the command graph's nodes and the algorithms' (defined in
//! `gpugraph-command`, where [`gpugraph_command::BindGroupCache`] is its bind-group case).

pub use gpugraph_command::BufferKeyed;
