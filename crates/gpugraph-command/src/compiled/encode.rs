//! Recording a [`CompiledGraph`] into a caller's encoder: import overrides, passes, and every
//! node's resolver over its declared uses.

use std::collections::HashMap;

use super::*;

impl CompiledGraph {
    fn resolve_overrides(
        &mut self,
        options: &EncodeOptions<'_>,
    ) -> Result<Option<HashMap<u32, wgpu::Buffer>>, GraphError> {
        if options.overrides.is_empty() {
            return Ok(None);
        }
        let mut map = HashMap::with_capacity(options.overrides.len());
        for &(h, buffer) in options.overrides {
            self.check_handle(h)?;
            let i = h.index as usize;
            let desc = &self.descriptors[i];
            if self.lifetimes[i] != Lifetime::Imported {
                return Err(GraphError::OverrideNotImported {
                    id: desc.id.clone(),
                });
            }
            if !self.probed_devices.contains(buffer) {
                validate_buffer(&self.id, &self.device, desc, buffer)?;
                self.probed_devices.insert(buffer.clone());
            } else if buffer.size() < desc.byte_length || !buffer.usage().contains(desc.usage) {
                validate_buffer(&self.id, &self.device, desc, buffer)?;
            }
            map.insert(h.index, buffer.clone());
        }
        Ok(Some(map))
    }

    /// Records every node, in compiled order, into `encoder`. Never submits. Consecutive
    /// compute nodes share one compute pass unless `options.profile` asks for a pass per node.
    /// Overrides are validated before anything is recorded. A node that fails
    /// ([`GraphError::NodeEncode`]) or resolves a handle it did not declare
    /// ([`GraphError::UndeclaredResource`]) stops the encode: the encoder then holds a partial
    /// recording and must be dropped, not submitted.
    ///
    /// A graph with frame textures encodes through [`Self::encode_frame`] only
    /// ([`GraphError::MissingFrameTexture`] here).
    pub fn encode(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        options: &EncodeOptions<'_>,
    ) -> Result<EncodeReport, GraphError> {
        if let Some(i) = self.frame_flags.iter().position(|&f| f) {
            return Err(GraphError::MissingFrameTexture {
                graph: self.id.clone(),
                texture: self.texture_ids[i].clone(),
            });
        }
        self.encode_with(encoder, options, None)
    }

    /// [`Self::encode`] with this frame's textures: every frame texture of the graph must be
    /// supplied once, match its descriptor (size, format, usage, mips, samples, layers) and
    /// belong to the graph's device, and `frame.frame_id` must exceed the previous
    /// encode_frame's ([`GraphError::StaleFrame`]); everything is checked before recording.
    /// The graph never keeps, presents or destroys these textures.
    pub fn encode_frame(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        options: &EncodeOptions<'_>,
        frame: &FrameTextures<'_>,
    ) -> Result<EncodeReport, GraphError> {
        if self.destroyed {
            return Err(GraphError::Destroyed {
                graph: self.id.clone(),
            });
        }
        if let Some(last) = self.last_frame.filter(|&l| frame.frame_id <= l) {
            return Err(GraphError::StaleFrame {
                graph: self.id.clone(),
                frame: frame.frame_id,
                last,
            });
        }
        let mut textures = self.textures.clone();
        let mut supplied = vec![false; textures.len()];
        for &(h, texture) in frame.textures {
            let i = h.index as usize;
            if h.graph != self.key || i >= textures.len() {
                return Err(GraphError::ForeignHandle {
                    graph: self.id.clone(),
                    what: "frame texture handle".into(),
                });
            }
            if !self.frame_flags[i] {
                return Err(GraphError::NotAFrameTexture {
                    graph: self.id.clone(),
                    texture: self.texture_ids[i].clone(),
                });
            }
            let d = &self.texture_descs[i];
            let shape = (
                (texture.width(), texture.height()),
                texture.format(),
                texture.mip_level_count(),
                texture.sample_count(),
                texture.depth_or_array_layers(),
            );
            let want = (
                d.size,
                d.format,
                d.mip_level_count,
                d.sample_count,
                d.layers,
            );
            let missing = d.usage - texture.usage();
            if shape != want || !missing.is_empty() || supplied[i] {
                return Err(GraphError::TextureMismatch {
                    id: d.id.clone(),
                    reason: if supplied[i] {
                        "supplied twice for one frame".into()
                    } else {
                        format!(
                            "(size, format, mips, samples, layers) {shape:?} != descriptor {want:?}, or usage lacks {missing:?}"
                        )
                    },
                });
            }
            if self.external_flags[i] && self.last_external[i].as_ref() == Some(texture) {
                return Err(GraphError::ExternalTextureReused {
                    graph: self.id.clone(),
                    texture: d.id.clone(),
                    frame: frame.frame_id,
                });
            }
            supplied[i] = true;
            textures[i] = texture.clone();
        }
        if let Some(i) = (0..textures.len()).find(|&i| self.frame_flags[i] && !supplied[i]) {
            return Err(GraphError::MissingFrameTexture {
                graph: self.id.clone(),
                texture: self.texture_ids[i].clone(),
            });
        }
        let externals: Vec<(usize, wgpu::Texture)> = (0..textures.len())
            .filter(|&i| self.external_flags[i])
            .map(|i| (i, textures[i].clone()))
            .collect();
        let report = self.encode_with(encoder, options, Some(textures))?;
        self.last_frame = Some(frame.frame_id);
        for (i, t) in externals {
            self.last_external[i] = Some(t);
        }
        Ok(report)
    }

    fn encode_with(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        options: &EncodeOptions<'_>,
        frame_textures: Option<Vec<wgpu::Texture>>,
    ) -> Result<EncodeReport, GraphError> {
        if self.destroyed {
            return Err(GraphError::Destroyed {
                graph: self.id.clone(),
            });
        }
        let overrides = self.resolve_overrides(options)?;
        if options.profile {
            if !self
                .device
                .features()
                .contains(wgpu::Features::TIMESTAMP_QUERY)
            {
                return Err(GraphError::ProfilingUnsupported {
                    graph: self.id.clone(),
                });
            }
            if self.profiler.is_none() {
                let timed = self
                    .nodes
                    .iter()
                    .map(|n| !matches!(n.exec, Executable::Copy(_)))
                    .collect::<Vec<_>>();
                self.profiler = Some(Profiler::new(&self.device, &self.id, &timed));
            }
        }
        let mut report = EncodeReport {
            node_encode_cpu: Vec::with_capacity(self.nodes.len()),
            ..Default::default()
        };
        let Self {
            id: graph_id,
            nodes,
            resolved,
            lengths,
            textures,
            profiler,
            buffer_ids,
            texture_ids,
            frame_flags,
            ..
        } = self;
        let textures: &[wgpu::Texture] = frame_textures.as_deref().unwrap_or(textures);
        let parts = Parts {
            buffers: resolved,
            lengths,
            textures,
            overrides: overrides.as_ref(),
            buffer_ids,
            texture_ids,
        };
        let profiler = if options.profile {
            profiler.as_mut()
        } else {
            None
        };
        let mut i = 0;
        while i < nodes.len() {
            match nodes[i].exec {
                Executable::Compute(_) => {
                    let end = if profiler.is_some() {
                        i + 1
                    } else {
                        (i..nodes.len())
                            .find(|&j| !matches!(nodes[j].exec, Executable::Compute(_)))
                            .unwrap_or(nodes.len())
                    };
                    let label = if end - i == 1 {
                        nodes[i].id.clone()
                    } else {
                        format!(
                            "{graph_id}: {} .. {} ({} nodes)",
                            nodes[i].id,
                            nodes[end - 1].id,
                            end - i
                        )
                    };
                    let timestamp_writes = profiler.as_ref().map(|p| p.compute_writes(i));
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(&label),
                        timestamp_writes,
                    });
                    report.compute_passes += 1;
                    for node in &mut nodes[i..end] {
                        let ctx = EncodeContext {
                            graph_id,
                            node_id: &node.id,
                            resolver: parts.resolver(&node.declared),
                        };
                        let Executable::Compute(exec) = &mut node.exec else {
                            continue;
                        };
                        pass.push_debug_group(&node.id);
                        let t0 = Instant::now();
                        let r = exec.encode(&mut pass, &ctx);
                        finish_node(graph_id, &ctx, r)?;
                        report.node_encode_cpu.push((node.id.clone(), t0.elapsed()));
                        pass.pop_debug_group();
                    }
                    i = end;
                }
                Executable::Render(..) => {
                    let node = &mut nodes[i];
                    let ctx = EncodeContext {
                        graph_id,
                        node_id: &node.id,
                        resolver: parts.resolver(&node.declared),
                    };
                    let Executable::Render(exec, views) = &mut node.exec else {
                        unreachable!()
                    };
                    // Attachments on frame textures: views of this frame's textures.
                    let fresh = (frame_textures.is_some() && views.uses_frame)
                        .then(|| super::pass_views(textures, frame_flags, &views.layout));
                    let views = fresh.as_ref().unwrap_or(views);
                    let color: Vec<Option<wgpu::RenderPassColorAttachment<'_>>> = views
                        .color
                        .iter()
                        .map(|(view, resolve, load, store)| {
                            Some(wgpu::RenderPassColorAttachment {
                                view,
                                depth_slice: None,
                                resolve_target: resolve.as_ref(),
                                ops: wgpu::Operations {
                                    load: match *load {
                                        ColorLoad::Clear(c) => wgpu::LoadOp::Clear(c),
                                        ColorLoad::Load => wgpu::LoadOp::Load,
                                    },
                                    store: store_op(*store),
                                },
                            })
                        })
                        .collect();
                    let depth_stencil_attachment = views.depth_stencil.as_ref().map(|(view, d)| {
                        wgpu::RenderPassDepthStencilAttachment {
                            view,
                            depth_ops: d.depth.map(|o| wgpu::Operations {
                                load: o.clear.map_or(wgpu::LoadOp::Load, wgpu::LoadOp::Clear),
                                store: store_op(o.store),
                            }),
                            stencil_ops: d.stencil.map(|o| wgpu::Operations {
                                load: o.clear.map_or(wgpu::LoadOp::Load, wgpu::LoadOp::Clear),
                                store: store_op(o.store),
                            }),
                        }
                    });
                    let timestamp_writes = profiler.as_ref().map(|p| p.render_writes(i));
                    let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                        label: Some(&node.id),
                        color_attachments: &color,
                        depth_stencil_attachment,
                        timestamp_writes,
                        occlusion_query_set: None,
                        multiview_mask: None,
                    });
                    report.render_passes += 1;
                    pass.push_debug_group(&node.id);
                    let t0 = Instant::now();
                    let r = exec.encode(&mut pass, &ctx);
                    finish_node(graph_id, &ctx, r)?;
                    report.node_encode_cpu.push((node.id.clone(), t0.elapsed()));
                    pass.pop_debug_group();
                    i += 1;
                }
                Executable::Copy(_) => {
                    let node = &mut nodes[i];
                    let ctx = EncodeContext {
                        graph_id,
                        node_id: &node.id,
                        resolver: parts.resolver(&node.declared),
                    };
                    let Executable::Copy(exec) = &mut node.exec else {
                        unreachable!()
                    };
                    encoder.push_debug_group(&node.id);
                    let t0 = Instant::now();
                    let r = exec.encode(encoder, &ctx);
                    finish_node(graph_id, &ctx, r)?;
                    report.node_encode_cpu.push((node.id.clone(), t0.elapsed()));
                    encoder.pop_debug_group();
                    i += 1;
                }
            }
        }
        if let Some(p) = profiler {
            p.resolve(encoder);
        }
        Ok(report)
    }
}

fn store_op(store: bool) -> wgpu::StoreOp {
    if store {
        wgpu::StoreOp::Store
    } else {
        wgpu::StoreOp::Discard
    }
}

/// What every node's resolver shares during one encode.
struct Parts<'a> {
    buffers: &'a [wgpu::Buffer],
    lengths: &'a [u64],
    textures: &'a [wgpu::Texture],
    overrides: Option<&'a HashMap<u32, wgpu::Buffer>>,
    buffer_ids: &'a [String],
    texture_ids: &'a [String],
}

impl<'a> Parts<'a> {
    fn resolver<'b>(&self, declared: &'b Declared) -> Resolver<'b>
    where
        'a: 'b,
    {
        Resolver {
            buffers: self.buffers,
            lengths: self.lengths,
            textures: self.textures,
            overrides: self.overrides,
            buffer_ids: self.buffer_ids,
            texture_ids: self.texture_ids,
            declared,
            violation: Default::default(),
            frame_textures: None,
        }
    }
}

/// A node's encode result, then any handle it resolved without declaring it.
fn finish_node(
    graph_id: &str,
    ctx: &EncodeContext<'_>,
    r: Result<(), crate::node::NodeError>,
) -> Result<(), GraphError> {
    r.map_err(|source| GraphError::NodeEncode {
        graph: graph_id.to_string(),
        node: ctx.node_id.to_string(),
        source,
    })?;
    match ctx.resolver.violation(graph_id, ctx.node_id) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
