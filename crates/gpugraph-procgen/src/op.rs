//! The spec's ops table: each op's name and where it runs (`runs`). The ops themselves are the
//! [`Cook`](crate::Cook) / [`Recording`](crate::Recording) methods and the Luau globals named
//! in each variant's doc.

/// Where an op runs: its `runs` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runs {
    /// On the device (`gpu`).
    Gpu,
    /// From the CPU to the device (`cpu_to_gpu`).
    CpuToGpu,
    /// From the device to the CPU (`gpu_to_cpu`).
    GpuToCpu,
    /// On the CPU (`cpu`).
    Cpu,
}

impl Runs {
    /// The spec's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Runs::Gpu => "gpu",
            Runs::CpuToGpu => "cpu_to_gpu",
            Runs::GpuToCpu => "gpu_to_cpu",
            Runs::Cpu => "cpu",
        }
    }
}

/// One op of the ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `device.kernel`: [`Cook::kernel`](crate::Cook::kernel).
    DeviceKernel,
    /// `transfer.upload`: [`Cook::upload`](crate::Cook::upload).
    TransferUpload,
    /// `transfer.readback`: [`Recording::readback`](crate::Recording::readback).
    TransferReadback,
    /// `cpu.call`: [`crate::luau::cpu_call::call`].
    CpuCall,
    /// `cpu.read`: `cpu.call` with a digest ([`crate::luau::Host`]).
    CpuRead,
    /// `device.bound`: [`Cook::bound`](crate::Cook::bound).
    DeviceBound,
    /// `device.live`: [`Cook::live`](crate::Cook::live).
    DeviceLive,
    /// `device.guard`: [`Cook::guard`](crate::Cook::guard).
    DeviceGuard,
}

impl Op {
    /// Every op, in the spec's table order.
    pub const ALL: [Op; 8] = [
        Op::DeviceKernel,
        Op::TransferUpload,
        Op::TransferReadback,
        Op::CpuCall,
        Op::CpuRead,
        Op::DeviceBound,
        Op::DeviceLive,
        Op::DeviceGuard,
    ];

    /// The op's name (`device.kernel`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::DeviceKernel => "device.kernel",
            Op::TransferUpload => "transfer.upload",
            Op::TransferReadback => "transfer.readback",
            Op::CpuCall => "cpu.call",
            Op::CpuRead => "cpu.read",
            Op::DeviceBound => "device.bound",
            Op::DeviceLive => "device.live",
            Op::DeviceGuard => "device.guard",
        }
    }

    /// The op of `name`, `None` for a name that is no op.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Where the op runs (its `runs` field).
    pub fn runs(self) -> Runs {
        match self {
            Op::DeviceKernel | Op::DeviceBound | Op::DeviceLive | Op::DeviceGuard => Runs::Gpu,
            Op::TransferUpload => Runs::CpuToGpu,
            Op::TransferReadback => Runs::GpuToCpu,
            Op::CpuCall | Op::CpuRead => Runs::Cpu,
        }
    }
}
