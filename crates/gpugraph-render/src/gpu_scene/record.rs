//! The GPUScene record (spec 6.1a): one fixed 128-byte interleaved record per renderable
//! object, and the byte ranges of its fields.
//!
//! | byte | field | format |
//! | ---: | --- | --- |
//! | 0 | `object_id` (stable application identity) | uint32 |
//! | 4 | `flags` ([`GPU_SCENE_ACTIVE_FLAG`] + caller bits) | uint32 |
//! | 8 | `group_id` (renderer-owned resource group) | uint32 |
//! | 12 | `geometry_id` (renderer-owned geometry) | uint32 |
//! | 16 | `sphere` (center xyz, radius w) | float32x4 |
//! | 32 | `aabb_min` | float32x3 |
//! | 44 | `command_slot` (indirect-command slot) | uint32 |
//! | 48 | `aabb_max` | float32x3 |
//! | 60 | reserved (zero) | uint32 |
//! | 64 | `transform` (4 column-major columns) | 4 × float32x4 |
//!
//! Why this layout: every vector starts 16-byte aligned, so the record is the WGSL struct
//! `SceneRecord` in `record.wgsl` member for member (a test checks it through naga), and every
//! field is a strided graph view (stride 128) of the one record buffer, never a repacked copy.
//! The sphere and the box are both stored because culling wants the sphere (one plane test
//! per plane) and spatial queries want the box; the caller decides their coordinate space.

use gpugraph_command::VectorFormat;

/// Bytes per record.
pub const GPU_SCENE_RECORD_BYTES: u64 = 128;
/// 32-bit words per record.
pub const GPU_SCENE_RECORD_WORDS: u64 = GPU_SCENE_RECORD_BYTES / 4;
/// The reserved "no reference" value of `object_id`, `group_id`, `geometry_id` and
/// `command_slot`; it is never a valid object ID.
pub const GPU_SCENE_INVALID_REFERENCE: u32 = u32::MAX;
/// The `flags` bit that marks a record live. Records a [`crate::GpuScene`] writes always have
/// it; a removed slot has `flags == 0`.
pub const GPU_SCENE_ACTIVE_FLAG: u32 = 1;

/// One scene record, exactly as it lies in GPU memory (see the module table).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GpuSceneRecord {
    /// Stable application identity (not the physical slot); never
    /// [`GPU_SCENE_INVALID_REFERENCE`].
    pub object_id: u32,
    /// [`GPU_SCENE_ACTIVE_FLAG`] plus caller-defined bits.
    pub flags: u32,
    /// Renderer-owned resource group, or [`GPU_SCENE_INVALID_REFERENCE`].
    pub group_id: u32,
    /// Renderer-owned geometry, or [`GPU_SCENE_INVALID_REFERENCE`].
    pub geometry_id: u32,
    /// Bounding sphere: center xyz, radius w (finite, radius ≥ 0).
    pub sphere: [f32; 4],
    /// Box minimum (finite, ≤ `aabb_max` per axis).
    pub aabb_min: [f32; 3],
    /// Indirect-command slot this record draws through, or [`GPU_SCENE_INVALID_REFERENCE`].
    pub command_slot: u32,
    /// Box maximum.
    pub aabb_max: [f32; 3],
    /// Zero; not a field (kept so the transform starts 16-byte aligned).
    pub reserved: u32,
    /// Column-major object-to-world transform (finite).
    pub transform: [[f32; 4]; 4],
}

/// The identity transform.
pub const IDENTITY: [[f32; 4]; 4] = [
    [1.0, 0.0, 0.0, 0.0],
    [0.0, 1.0, 0.0, 0.0],
    [0.0, 0.0, 1.0, 0.0],
    [0.0, 0.0, 0.0, 1.0],
];

impl GpuSceneRecord {
    /// An active record for `object_id` with no references, empty bounds at the origin and
    /// the identity transform.
    pub fn new(object_id: u32) -> Self {
        Self {
            object_id,
            flags: GPU_SCENE_ACTIVE_FLAG,
            group_id: GPU_SCENE_INVALID_REFERENCE,
            geometry_id: GPU_SCENE_INVALID_REFERENCE,
            sphere: [0.0; 4],
            aabb_min: [0.0; 3],
            command_slot: GPU_SCENE_INVALID_REFERENCE,
            aabb_max: [0.0; 3],
            reserved: 0,
            transform: IDENTITY,
        }
    }

    /// The same record in resource group `group_id`.
    pub fn with_group(mut self, group_id: u32) -> Self {
        self.group_id = group_id;
        self
    }

    /// The same record drawing geometry `geometry_id`.
    pub fn with_geometry(mut self, geometry_id: u32) -> Self {
        self.geometry_id = geometry_id;
        self
    }

    /// The same record drawing through indirect-command slot `slot`.
    pub fn with_command_slot(mut self, slot: u32) -> Self {
        self.command_slot = slot;
        self
    }

    /// The same record with box `[min, max]` and the sphere circumscribing it.
    pub fn with_aabb(mut self, min: [f32; 3], max: [f32; 3]) -> Self {
        self.aabb_min = min;
        self.aabb_max = max;
        self.sphere = sphere_around(min, max);
        self
    }

    /// The same record with this sphere (the box is left as it is).
    pub fn with_sphere(mut self, sphere: [f32; 4]) -> Self {
        self.sphere = sphere;
        self
    }

    /// The same record with this transform.
    pub fn with_transform(mut self, transform: [[f32; 4]; 4]) -> Self {
        self.transform = transform;
        self
    }

    /// Whether [`GPU_SCENE_ACTIVE_FLAG`] is set.
    pub fn is_active(&self) -> bool {
        self.flags & GPU_SCENE_ACTIVE_FLAG != 0
    }

    /// The record's words (what the GPU buffer holds).
    pub fn words(&self) -> &[u32; GPU_SCENE_RECORD_WORDS as usize] {
        bytemuck::cast_ref(self)
    }

    /// Why the record cannot be stored (`None` when it can): the field and the reason.
    pub(crate) fn problem(&self) -> Option<(GpuSceneField, String)> {
        if self.object_id == GPU_SCENE_INVALID_REFERENCE {
            return Some((
                GpuSceneField::ObjectId,
                "0xffffffff is the reserved invalid reference".into(),
            ));
        }
        sphere_problem(&self.sphere)
            .map(|r| (GpuSceneField::Sphere, r))
            .or_else(|| {
                aabb_problem(&self.aabb_min, &self.aabb_max).map(|r| (GpuSceneField::AabbMin, r))
            })
            .or_else(|| transform_problem(&self.transform).map(|r| (GpuSceneField::Transform, r)))
    }
}

/// The sphere centered on the box with the half diagonal as radius.
pub fn sphere_around(min: [f32; 3], max: [f32; 3]) -> [f32; 4] {
    let c: [f32; 3] = std::array::from_fn(|i| (min[i] + max[i]) * 0.5);
    let h: [f32; 3] = std::array::from_fn(|i| (max[i] - min[i]) * 0.5);
    [
        c[0],
        c[1],
        c[2],
        (h[0] * h[0] + h[1] * h[1] + h[2] * h[2]).sqrt(),
    ]
}

/// Whether every value is finite: a plain loop (the validation of every patched value runs
/// it; iterator chains cost several times more in the CI's opt-level-1 builds).
#[inline]
fn all_finite<const N: usize>(v: &[f32; N]) -> bool {
    let mut ok = true;
    let mut i = 0;
    while i < N {
        ok &= v[i].is_finite();
        i += 1;
    }
    ok
}

pub(crate) fn sphere_problem(s: &[f32; 4]) -> Option<String> {
    if !all_finite(s) {
        return Some(format!("sphere {s:?} is not finite"));
    }
    (s[3] < 0.0).then(|| format!("sphere radius {} is negative", s[3]))
}

pub(crate) fn aabb_problem(min: &[f32; 3], max: &[f32; 3]) -> Option<String> {
    if !(all_finite(min) && all_finite(max)) {
        return Some(format!("box {min:?}..{max:?} is not finite"));
    }
    (0..3)
        .find(|&i| max[i] < min[i])
        .map(|i| format!("box axis {i}: max {} < min {}", max[i], min[i]))
}

pub(crate) fn transform_problem(t: &[[f32; 4]; 4]) -> Option<String> {
    let flat: &[f32; 16] = bytemuck::cast_ref(t);
    (!all_finite(flat)).then(|| format!("transform {t:?} is not finite"))
}

/// A field of [`GpuSceneRecord`]: its byte range and stored format (one strided graph view
/// each, see [`crate::GpuSceneViews`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuSceneField {
    /// Bytes 0..4, uint32.
    ObjectId,
    /// Bytes 4..8, uint32.
    Flags,
    /// Bytes 8..12, uint32.
    GroupId,
    /// Bytes 12..16, uint32.
    GeometryId,
    /// Bytes 16..32, float32x4.
    Sphere,
    /// Bytes 32..44, float32x3.
    AabbMin,
    /// Bytes 44..48, uint32.
    CommandSlot,
    /// Bytes 48..60, float32x3.
    AabbMax,
    /// Bytes 64..128, four float32x4 columns.
    Transform,
}

impl GpuSceneField {
    /// Every field in record order.
    pub const ALL: [GpuSceneField; 9] = [
        GpuSceneField::ObjectId,
        GpuSceneField::Flags,
        GpuSceneField::GroupId,
        GpuSceneField::GeometryId,
        GpuSceneField::Sphere,
        GpuSceneField::AabbMin,
        GpuSceneField::CommandSlot,
        GpuSceneField::AabbMax,
        GpuSceneField::Transform,
    ];

    /// Byte offset inside the record.
    pub fn byte_offset(self) -> u64 {
        match self {
            GpuSceneField::ObjectId => 0,
            GpuSceneField::Flags => 4,
            GpuSceneField::GroupId => 8,
            GpuSceneField::GeometryId => 12,
            GpuSceneField::Sphere => 16,
            GpuSceneField::AabbMin => 32,
            GpuSceneField::CommandSlot => 44,
            GpuSceneField::AabbMax => 48,
            GpuSceneField::Transform => 64,
        }
    }

    /// Stored format of one row of the field's view (a transform is four float32x4 views).
    pub fn format(self) -> VectorFormat {
        match self {
            GpuSceneField::Sphere | GpuSceneField::Transform => VectorFormat::Float32x4,
            GpuSceneField::AabbMin | GpuSceneField::AabbMax => VectorFormat::Float32x3,
            _ => VectorFormat::Uint32,
        }
    }

    /// Bytes the field occupies in the record.
    pub fn byte_length(self) -> u64 {
        match self {
            GpuSceneField::Transform => 64,
            f => f.format().byte_size() as u64,
        }
    }

    /// Name for messages.
    pub fn name(self) -> &'static str {
        match self {
            GpuSceneField::ObjectId => "object_id",
            GpuSceneField::Flags => "flags",
            GpuSceneField::GroupId => "group_id",
            GpuSceneField::GeometryId => "geometry_id",
            GpuSceneField::Sphere => "sphere",
            GpuSceneField::AabbMin => "aabb_min",
            GpuSceneField::CommandSlot => "command_slot",
            GpuSceneField::AabbMax => "aabb_max",
            GpuSceneField::Transform => "transform",
        }
    }
}

/// The scene's GPU state block (WGSL `SceneState`, 16 bytes): what GPU consumers read instead
/// of asking the CPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GpuSceneState {
    /// Physical high-water mark: slots `0..count` were ever written (holes included).
    pub count: u32,
    /// Live records (`flags` has [`GPU_SCENE_ACTIVE_FLAG`]).
    pub active_count: u32,
    /// 1 once an insertion found no free slot (sticky until
    /// [`crate::GpuScene::reset_overflow`]).
    pub overflow: u32,
    /// Zero.
    pub reserved: u32,
}

/// Bytes of the state block.
pub const GPU_SCENE_STATE_BYTES: u64 = std::mem::size_of::<GpuSceneState>() as u64;

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust record is the WGSL `SceneRecord` byte for byte, and the field table agrees.
    #[test]
    fn record_layout_matches_the_shader() {
        assert_eq!(
            std::mem::size_of::<GpuSceneRecord>() as u64,
            GPU_SCENE_RECORD_BYTES
        );
        let module =
            naga::front::wgsl::parse_str(super::super::RECORD_WGSL).expect("record.wgsl parses");
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let (h, t) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("SceneRecord"))
            .expect("SceneRecord");
        let naga::TypeInner::Struct { members, .. } = &t.inner else {
            panic!("SceneRecord is a struct")
        };
        assert_eq!(u64::from(layouter[h].size), GPU_SCENE_RECORD_BYTES);
        let offsets: Vec<(String, u32)> = members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
            .collect();
        let expected: Vec<(String, u32)> = GpuSceneField::ALL
            .iter()
            .map(|f| (f.name().to_string(), f.byte_offset() as u32))
            .chain([("reserved".to_string(), 60)])
            .collect();
        for e in &expected {
            assert!(offsets.contains(e), "{e:?} not in {offsets:?}");
        }
        let r = GpuSceneRecord::new(7).with_command_slot(3).with_group(2);
        assert_eq!(r.words()[0], 7);
        assert_eq!(
            r.words()[(GpuSceneField::CommandSlot.byte_offset() / 4) as usize],
            3
        );
        assert_eq!(
            r.words()[(GpuSceneField::GroupId.byte_offset() / 4) as usize],
            2
        );
    }

    #[test]
    fn field_ranges_tile_the_record() {
        let mut covered = [false; 128];
        for f in GpuSceneField::ALL {
            let range = f.byte_offset()..f.byte_offset() + f.byte_length();
            for b in range {
                assert!(!covered[b as usize], "{} overlaps at byte {b}", f.name());
                covered[b as usize] = true;
            }
        }
        let uncovered: Vec<usize> = (0..128).filter(|&b| !covered[b]).collect();
        assert_eq!(
            uncovered,
            vec![60, 61, 62, 63],
            "only the reserved word is no field"
        );
    }
}
