//! The limits every script runs under: a CPU-time ceiling on each entry into the script
//! (loading it, each `inputs(frame)`, `cook(frame)` and digest, each host [`super::Host::call`])
//! and a memory limit on the whole Luau state.
//!
//! The ceiling counts the host thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) from the entry
//! until it returns, ops included, plus the time the entry sleeps in `task.wait`/`task.delay`:
//! a script that sleeps is not busy, but it still holds the host, so an unbounded sleep is as
//! much a hang as a busy loop. A sleep that would run past the ceiling is refused at once
//! instead of slept. Luau's interrupt (called at loop back-edges, calls and inside pattern
//! matching) stops a running entry; once tripped it stops every later safepoint too, so a
//! script cannot `pcall` its way past the ceiling.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use mlua::{Lua, VmState};

/// The CPU-time ceiling of each entry into a script unless stated ([`ScriptLimits`]).
pub const DEFAULT_SCRIPT_CPU_TIME: Duration = Duration::from_secs(10);
/// The memory limit of a script's Luau state unless stated (1 GiB).
pub const DEFAULT_SCRIPT_MEMORY: usize = 1 << 30;

/// What a script may use: the CLI's `--script-timeout` and `--script-memory`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScriptLimits {
    /// The CPU-time ceiling (CPU time plus sleep) of each entry into the script. A zero
    /// ceiling refuses every entry at its first safepoint.
    pub cpu_time: Duration,
    /// The most bytes the Luau state may allocate, the host's prelude included (about 100 KiB).
    pub memory: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        Self {
            cpu_time: DEFAULT_SCRIPT_CPU_TIME,
            memory: DEFAULT_SCRIPT_MEMORY,
        }
    }
}

/// The calling thread's CPU time in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One cpu.call's ceiling: CPU time only (its waits are not charged to it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ceiling {
    pub(crate) start_ns: u64,
    pub(crate) limit_ns: u64,
    /// Set once the interrupt stopped the call.
    pub tripped: bool,
}

/// One entry's budget: CPU time plus sleep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    start_ns: u64,
    limit_ns: u64,
    slept_ns: u64,
    /// Set once the interrupt stopped the entry or a sleep past the ceiling was refused.
    pub(crate) tripped: bool,
    /// What the entry had used when it was stopped (with a refused sleep, what it asked).
    pub(crate) used_ns: u64,
}

impl Budget {
    fn used(&self, now_ns: u64) -> u64 {
        now_ns
            .saturating_sub(self.start_ns)
            .saturating_add(self.slept_ns)
    }
}

/// What the interrupt enforces: the cpu.call in progress and the script entry in progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct Meter {
    pub(crate) call: Option<Ceiling>,
    pub(crate) script: Option<Budget>,
    /// The state's memory limit (for the error that names it).
    pub(crate) memory: usize,
    ticks: u32,
}

impl Meter {
    /// A meter with no ceiling armed, for a state limited to `memory` bytes.
    pub fn with_memory(memory: usize) -> Self {
        Self {
            memory,
            ..Self::default()
        }
    }
}

/// The meter the interrupt, the ops and the host share.
pub type SharedMeter = Rc<Cell<Meter>>;

/// The text a stopped script is raised with (the host answers the typed error).
const STOPPED: &str = "procgen: the script ran past its CPU-time ceiling";

/// Installs the interrupt that enforces `meter`.
pub fn install(lua: &Lua, meter: SharedMeter) {
    lua.set_interrupt(move |_| {
        let mut m = meter.get();
        if m.call.is_none() && m.script.is_none() {
            return Ok(VmState::Continue);
        }
        if m.script.is_some_and(|b| b.tripped) || m.call.is_some_and(|c| c.tripped) {
            return Err(mlua::Error::runtime(STOPPED));
        }
        // Reading the clock is a system call: look every 64 safepoints.
        m.ticks = m.ticks.wrapping_add(1);
        if m.ticks.is_multiple_of(64) {
            let now = thread_cpu_ns();
            let mut stop = false;
            if let Some(c) = m.call.as_mut() {
                if now.saturating_sub(c.start_ns) > c.limit_ns {
                    c.tripped = true;
                    stop = true;
                }
            }
            if let Some(b) = m.script.as_mut() {
                if b.used(now) > b.limit_ns {
                    b.tripped = true;
                    b.used_ns = b.used(now);
                    stop = true;
                }
            }
            meter.set(m);
            if stop {
                return Err(mlua::Error::runtime(STOPPED));
            }
            return Ok(VmState::Continue);
        }
        meter.set(m);
        Ok(VmState::Continue)
    });
}

/// Arms an entry's budget unless one is running (an entry inside an entry shares the outer
/// one); answers whether it armed one.
pub(crate) fn arm(meter: &SharedMeter, limit: Duration) -> bool {
    let mut m = meter.get();
    if m.script.is_some() {
        return false;
    }
    m.script = Some(Budget {
        start_ns: thread_cpu_ns(),
        limit_ns: limit.as_nanos().min(u64::MAX as u128) as u64,
        slept_ns: 0,
        tripped: false,
        used_ns: 0,
    });
    meter.set(m);
    true
}

/// Disarms the entry's budget; answers it.
pub(crate) fn disarm(meter: &SharedMeter) -> Option<Budget> {
    let mut m = meter.get();
    let b = m.script.take();
    meter.set(m);
    b.map(|mut b| {
        if !b.tripped {
            b.used_ns = b.used(thread_cpu_ns());
        }
        b
    })
}

/// Sleeps `seconds` (the task library's waits), charged to the entry in progress; a sleep
/// that would run past its ceiling is refused without sleeping. Outside an entry a sleep is
/// capped at a minute.
pub(crate) fn sleep(meter: &SharedMeter, seconds: f64) -> mlua::Result<()> {
    // NaN and negatives sleep nothing (Duration::from_secs_f64 would panic on them).
    let seconds = if seconds.is_nan() {
        0.0
    } else {
        seconds.max(0.0)
    };
    let mut m = meter.get();
    if let Some(b) = m.script.as_mut() {
        let used = b.used(thread_cpu_ns());
        if used as f64 + seconds * 1e9 > b.limit_ns as f64 {
            b.tripped = true;
            b.used_ns = (used as f64 + seconds * 1e9).min(u64::MAX as f64) as u64;
            meter.set(m);
            return Err(mlua::Error::runtime(STOPPED));
        }
    }
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds.min(60.0)));
    let slept = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
    let mut m = meter.get();
    if let Some(b) = m.script.as_mut() {
        b.slept_ns = b.slept_ns.saturating_add(slept);
    }
    meter.set(m);
    Ok(())
}

/// Whether `e` is Luau running out of its memory limit (also when a coroutine's memory error
/// was raised again as its message by the task library).
pub(crate) fn out_of_memory(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::RuntimeError(m) => m == "not enough memory",
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            out_of_memory(cause)
        }
        _ => false,
    }
}
