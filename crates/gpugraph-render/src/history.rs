//! [`TextureHistory`] (the spec's GPUTextureHistory): the last N frames of a texture for
//! temporal effects (reprojection, accumulation), with explicit ownership and frame IDs.
//!
//! The history owns N textures of one descriptor. [`TextureHistory::advance`] starts a frame
//! with a strictly increasing frame ID: the oldest slot becomes the current one (its old
//! contents are that frame's to overwrite). [`TextureHistory::previous`] names what earlier
//! frames rendered, with their IDs. A graph reads and writes the slots as frame textures
//! ([`gpugraph_command::CommandGraph::import_frame_texture`]) supplied per encoding through
//! [`TextureHistory::frame_textures`], so the compiled graph never holds a slot across frames.

use gpugraph_command::{TextureDescriptor, TextureHandle};

use crate::RenderError;

/// N frames of one texture (see the module doc).
pub struct TextureHistory {
    label: String,
    textures: Vec<wgpu::Texture>,
    /// Frame ID each slot was last current in.
    frames: Vec<Option<u64>>,
    /// The current slot (valid once a frame started).
    head: usize,
    last: Option<u64>,
    destroyed: bool,
}

impl TextureHistory {
    /// `length` (at least 2) textures created from `desc` (labelled `{id} [k]`), owned by the
    /// history. Fewer than 2 is [`RenderError::HistoryLength`].
    pub fn new(
        device: &wgpu::Device,
        desc: &TextureDescriptor,
        length: usize,
    ) -> Result<Self, RenderError> {
        if length < 2 {
            return Err(RenderError::HistoryLength {
                label: desc.id.clone(),
                length,
            });
        }
        let textures = (0..length)
            .map(|k| {
                let label = format!("{} [{k}]", desc.id);
                let mut d = desc.wgpu_descriptor();
                d.label = Some(&label);
                device.create_texture(&d)
            })
            .collect();
        Ok(Self {
            label: desc.id.clone(),
            textures,
            frames: vec![None; length],
            head: length - 1,
            last: None,
            destroyed: false,
        })
    }

    fn usable(&self) -> Result<(), RenderError> {
        if self.destroyed {
            return Err(RenderError::HistoryDestroyed {
                label: self.label.clone(),
            });
        }
        Ok(())
    }

    /// Starts frame `frame_id` (above every earlier one, else [`RenderError::StaleHistoryFrame`]):
    /// the oldest slot becomes current.
    pub fn advance(&mut self, frame_id: u64) -> Result<(), RenderError> {
        self.usable()?;
        if let Some(last) = self.last.filter(|&l| frame_id <= l) {
            return Err(RenderError::StaleHistoryFrame {
                label: self.label.clone(),
                frame: frame_id,
                last,
            });
        }
        self.head = (self.head + 1) % self.textures.len();
        self.frames[self.head] = Some(frame_id);
        self.last = Some(frame_id);
        Ok(())
    }

    /// The current frame's ID and texture (after the first [`Self::advance`]).
    pub fn current(&self) -> Result<(u64, &wgpu::Texture), RenderError> {
        self.usable()?;
        let frame = self.last.ok_or_else(|| RenderError::HistoryNotStarted {
            label: self.label.clone(),
        })?;
        Ok((frame, &self.textures[self.head]))
    }

    /// The frame `age` frames back (1 = the previous frame) and its texture; `None` when the
    /// history is shorter than that or holds no such frame yet.
    pub fn previous(&self, age: usize) -> Option<(u64, &wgpu::Texture)> {
        if self.destroyed || self.last.is_none() || age == 0 || age >= self.textures.len() {
            return None;
        }
        let n = self.textures.len();
        let slot = (self.head + n - age) % n;
        self.frames[slot].map(|f| (f, &self.textures[slot]))
    }

    /// The frame textures of this frame for a graph that imported `current` and `previous`
    /// as frame textures: the current slot, and the previous frame's slot (before a previous
    /// frame exists, the slot the next frame will use, with undefined contents). Pass them with
    /// the frame ID from [`Self::current`] to `encode_frame`.
    pub fn frame_textures(
        &self,
        current: TextureHandle,
        previous: TextureHandle,
    ) -> Result<[(TextureHandle, &wgpu::Texture); 2], RenderError> {
        let (_, now) = self.current()?;
        let n = self.textures.len();
        let before = &self.textures[(self.head + n - 1) % n];
        Ok([(current, now), (previous, before)])
    }

    /// Frames kept.
    pub fn len(&self) -> usize {
        self.textures.len()
    }

    /// Always false: a history keeps at least 2 frames.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Destroys the owned textures; later calls fail with [`RenderError::HistoryDestroyed`].
    pub fn destroy(&mut self) {
        if !self.destroyed {
            self.destroyed = true;
            for t in &self.textures {
                t.destroy();
            }
        }
    }
}

impl Drop for TextureHistory {
    fn drop(&mut self) {
        self.destroy();
    }
}
