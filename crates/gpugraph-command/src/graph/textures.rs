//! The graph's textures: imported, graph-owned (aliased like transient buffers), per-frame and
//! external, each checked against the device when declared.

use super::*;

impl CommandGraph {
    /// Imports a caller-owned 2-D texture after checking size, format and usage.
    pub fn import_texture(
        &mut self,
        desc: TextureDescriptor,
        texture: &wgpu::Texture,
    ) -> Result<TextureHandle, GraphError> {
        self.check_texture_desc(&desc)?;
        let actual = (texture.width(), texture.height());
        let mismatch = |reason: String| GraphError::TextureMismatch {
            id: desc.id.clone(),
            reason,
        };
        if actual != desc.size {
            return Err(mismatch(format!(
                "size {actual:?} != descriptor {:?}",
                desc.size
            )));
        }
        let shape = (
            texture.mip_level_count(),
            texture.sample_count(),
            texture.depth_or_array_layers(),
        );
        let want = (desc.mip_level_count, desc.sample_count, desc.layers);
        if shape != want || texture.dimension() != wgpu::TextureDimension::D2 {
            return Err(mismatch(format!(
                "{:?} texture with (mips, samples, layers) {shape:?} != descriptor 2-D {want:?}",
                texture.dimension()
            )));
        }
        if texture.format() != desc.format {
            return Err(mismatch(format!(
                "format {:?} != descriptor {:?}",
                texture.format(),
                desc.format
            )));
        }
        let missing = desc.usage - texture.usage();
        if !missing.is_empty() {
            return Err(mismatch(format!(
                "usage lacks {}",
                texture_usage_name(missing)
            )));
        }
        self.resource_ids.insert(desc.id.clone());
        self.textures.push(TextureEntry {
            desc,
            import: Some(texture.clone()),
            frame: false,
            external: false,
        });
        Ok(TextureHandle {
            graph: self.key,
            index: (self.textures.len() - 1) as u32,
        })
    }

    /// Declares a graph-owned texture, created at compile time and destroyed with the graph.
    /// Two graph-owned textures with equal descriptors (but for the id) and disjoint
    /// lifetimes may share one allocation, as transient buffers do: a graph texture's
    /// contents do not outlive the last node that uses it.
    pub fn create_texture(&mut self, desc: TextureDescriptor) -> Result<TextureHandle, GraphError> {
        self.check_texture_desc(&desc)?;
        self.resource_ids.insert(desc.id.clone());
        self.textures.push(TextureEntry {
            desc,
            import: None,
            frame: false,
            external: false,
        });
        Ok(TextureHandle {
            graph: self.key,
            index: (self.textures.len() - 1) as u32,
        })
    }

    /// Declares a frame texture: a caller-acquired texture (a swapchain image, a history
    /// slot) supplied anew to every [`crate::CompiledGraph::encode_frame`] with one strictly
    /// increasing frame ID, and checked there against `desc`. The graph orders its uses like
    /// any texture's but never acquires, presents or destroys it. Nodes use it as a render
    /// attachment or resolve it at encode time ([`crate::EncodeContext::texture`]); resolving
    /// it at compile time fails the node ([`GraphError::FrameTextureAtCompile`]): nothing
    /// built then could follow the next frame's texture.
    pub fn import_frame_texture(
        &mut self,
        desc: TextureDescriptor,
    ) -> Result<TextureHandle, GraphError> {
        self.check_texture_desc(&desc)?;
        self.resource_ids.insert(desc.id.clone());
        self.textures.push(TextureEntry {
            desc,
            import: None,
            frame: true,
            external: false,
        });
        Ok(TextureHandle {
            graph: self.key,
            index: (self.textures.len() - 1) as u32,
        })
    }

    /// Declares an external image (a video frame, a camera image): a distinct sampled-only
    /// frame texture. Its usage must be exactly `TEXTURE_BINDING`; nodes may only sample it
    /// (any other access, an attachment, a copy is [`GraphError::ExternalTextureAccess`]).
    /// Every [`crate::CompiledGraph::encode_frame`] must supply a fresh texture, not the
    /// previous encoding's ([`GraphError::ExternalTextureReused`]), under the frame's one
    /// frame ID; nodes resolve it while encoding ([`crate::EncodeContext::texture`]), so
    /// their bindings are fresh too. wgpu's `ExternalTexture` is not used: this is the copied
    /// fallback, where the application writes each image into a texture it owns.
    pub fn import_external_texture(
        &mut self,
        desc: TextureDescriptor,
    ) -> Result<TextureHandle, GraphError> {
        if desc.usage != wgpu::TextureUsages::TEXTURE_BINDING || desc.sample_count != 1 {
            return Err(self.invalid_desc(
                &desc.id,
                format!(
                    "an external texture is sampled only: usage must be exactly TEXTURE_BINDING with 1 sample, got {:?} with {}",
                    desc.usage, desc.sample_count
                ),
            ));
        }
        let h = self.import_frame_texture(desc)?;
        self.textures[h.index as usize].external = true;
        Ok(h)
    }

    fn check_texture_desc(&self, desc: &TextureDescriptor) -> Result<(), GraphError> {
        self.check_resource_id(&desc.id)?;
        if desc.usage.is_empty() {
            return Err(self.invalid_desc(&desc.id, "usage is empty".into()));
        }
        let limits = self.device.limits();
        let max = limits.max_texture_dimension_2d;
        if desc.size.0 == 0 || desc.size.1 == 0 || desc.size.0 > max || desc.size.1 > max {
            return Err(self.invalid_desc(
                &desc.id,
                format!("size {:?} must be within 1..={max}", desc.size),
            ));
        }
        let full_chain = 32 - desc.size.0.max(desc.size.1).leading_zeros();
        if desc.mip_level_count == 0 || desc.mip_level_count > full_chain {
            return Err(self.invalid_desc(
                &desc.id,
                format!(
                    "mip level count {} must be within 1..={full_chain} for size {:?}",
                    desc.mip_level_count, desc.size
                ),
            ));
        }
        if desc.layers == 0 || desc.layers > limits.max_texture_array_layers {
            return Err(self.invalid_desc(
                &desc.id,
                format!(
                    "layer count {} must be within 1..={}",
                    desc.layers, limits.max_texture_array_layers
                ),
            ));
        }
        if desc.sample_count != 1 {
            let flags = desc
                .format
                .guaranteed_format_features(self.device.features())
                .flags;
            let supported = flags.sample_count_supported(desc.sample_count);
            let misuse = desc.mip_level_count != 1
                || desc.layers != 1
                || !desc.usage.contains(wgpu::TextureUsages::RENDER_ATTACHMENT)
                || desc.usage.contains(wgpu::TextureUsages::STORAGE_BINDING);
            if !supported || misuse {
                return Err(self.invalid_desc(
                    &desc.id,
                    format!(
                        "sample count {} needs a format that supports it ({:?}: {supported}), one mip, one layer and RENDER_ATTACHMENT without STORAGE_BINDING usage",
                        desc.sample_count, desc.format
                    ),
                ));
            }
        }
        Ok(())
    }
}
