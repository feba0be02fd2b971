//! gpugraph-viewer: the trace viewer (spec T.3). One wgpu renderer and UI ([`Viewer`]) over
//! gpugraph-trace's compiled [`gpugraph_trace::frame::TraceFrame`], shared by two shells: a
//! web build (wasm32, WebGPU; `web` module and the static page in `web/`) and a native
//! window (winit; [`native`]). [`serve`] serves the web build and one trace over HTTP.
//!
//! * [`camera`], [`labels`], [`state`], [`input`], [`tooltip`]: plain Rust (camera math,
//!   label hit areas, the view state and its URL hash, input events → view changes, the
//!   facts shown for a span), unit-tested against the trace crate's CPU oracles.
//! * [`gpu`]: the [`Viewer`]: every frame is queue writes of the view, the frame graph, the
//!   span draw (indirect, in the surface's format) and the UI in one submission; visible
//!   counts and picks come back through a small ring of asynchronously mapped buffers,
//!   polled without blocking.
//! * [`offscreen`] (native): one frame of the same viewer drawn into a texture and read back
//!   as RGBA pixels (`gpugraph trace render`).
//!
//! Text and panels are drawn with egui's painter through egui-wgpu 0.37 (built on wgpu 30),
//! with egui's embedded fonts; egui takes no input here (the viewer's controller does).

#![warn(missing_docs)]

pub mod camera;
pub mod gpu;
pub mod input;
pub mod labels;
pub mod state;
pub mod tooltip;

#[cfg(not(target_arch = "wasm32"))]
pub mod native;
#[cfg(not(target_arch = "wasm32"))]
pub mod offscreen;
#[cfg(not(target_arch = "wasm32"))]
pub mod serve;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use gpu::{FrameStats, Viewer};
pub use input::{InputEvent, Key};
pub use state::ViewState;

/// What went wrong, naming the thing that was wrong.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    /// The trace could not be read or parsed.
    #[error("the trace could not be loaded: {0}")]
    Trace(Box<gpugraph_trace::TraceError>),
    /// The trace frame could not be built or encoded (capacity, graph compile).
    #[error("the trace frame failed: {0}")]
    Gpu(Box<gpugraph_trace::TraceGpuError>),
    /// No GPU adapter or device.
    #[error("no GPU: {0}")]
    NoGpu(String),
    /// The window or surface could not be created or drawn to.
    #[error("window/surface: {0}")]
    Surface(String),
    /// A URL hash value is malformed.
    #[error("URL hash: bad value {value:?} for {key:?}")]
    Hash {
        /// The key.
        key: String,
        /// Its value.
        value: String,
    },
    /// The server could not start or a file of the web bundle is missing.
    #[error("serve: {0}")]
    Serve(String),
    /// An I/O error on a named path.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl From<gpugraph_trace::TraceError> for ViewerError {
    fn from(e: gpugraph_trace::TraceError) -> Self {
        Self::Trace(Box::new(e))
    }
}

impl From<gpugraph_trace::TraceGpuError> for ViewerError {
    fn from(e: gpugraph_trace::TraceGpuError) -> Self {
        Self::Gpu(Box::new(e))
    }
}
