//! device.bound, device.guard, and the record/replay cook loop ([`Player`]).
//!
//! A cook records its GPU work once (one compiled command graph); later cooks replay it. A count
//! the device holds with no stated capacity is given the room a cook measures (twice the count,
//! in powers of two, never less than an earlier recording's); the recording runs the count
//! clamped to that room and raises a guard word when it outgrew it. The next cook reads the
//! guard words of the replay before it (already complete: no frame is waited for), and when one
//! is raised, lets the recording go and records again with four times the room.

use bytemuck::Pod;
use gpugraph_command::{wgpu, Access, Grid};

use crate::column::{Column, ColumnType, LiveCount};
use crate::cook::{read_words, u32_count, Cook, GuardWord, LiveNumber, Measure, Recording};
use crate::count::{CountExpr, CountValue};
use crate::error::{ProcgenError, Result};

const CLAMP_GUARD_WGSL: &str = include_str!("../assets/internal/clamp_guard.wgsl");

#[repr(C)]
#[derive(Clone, Copy, Pod, bytemuck::Zeroable)]
struct ClampParams {
    room: u32,
}

/// The room a measured count gets: twice the count, rounded up to a power of two (at least 1).
pub fn room_for(count: u64) -> u64 {
    (count.max(1) * 2).next_power_of_two()
}

/// What device.bound answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Bounded {
    /// A number the plan knows.
    Known(u64),
    /// A live count with the most it can reach.
    Live(LiveCount),
}

/// A marker error a [`Player`] catches: the cook must measure a count before it can record.
pub(crate) const MEASURE: &str = "procgen: measure";

impl Cook {
    /// device.bound { value, capacity, live } under `name` (unique within the cook).
    ///
    /// - a number stays the number, unless `live`: then it is written to the device as the
    ///   count, allocated the next power of two at or above it;
    /// - a count with a stated `capacity` carries it and holds no guard;
    /// - arithmetic over counts that only grows carries the arithmetic's capacity;
    /// - a count with no capacity gets the room this cook's [`Player`] measured for `name`, is
    ///   clamped to it on the device, and holds a guard word.
    pub fn bound(
        &mut self,
        name: &str,
        value: &CountExpr,
        capacity: Option<u64>,
        live: bool,
    ) -> Result<Bounded> {
        match self.count_at(value, &format!("device.bound `{name}`"))? {
            CountValue::Known(n) if !live => Ok(Bounded::Known(n)),
            CountValue::Known(n) => {
                let word = self.upload_count(name, u32_count(name, n)?).buffer;
                let room = n.max(1).next_power_of_two();
                self.live_numbers.push(LiveNumber {
                    name: name.into(),
                    word: word.clone(),
                    room,
                    value: n,
                });
                Ok(Bounded::Live(LiveCount {
                    word,
                    capacity: room,
                }))
            }
            CountValue::Live(l) => {
                if let Some(cap) = capacity {
                    return Ok(Bounded::Live(LiveCount { capacity: cap, ..l }));
                }
                if !matches!(value.unnamed(), CountExpr::Count(_)) {
                    return Ok(Bounded::Live(l));
                }
                let Some(&room) = self.rooms.get(name) else {
                    self.measure = Some(Measure {
                        name: name.into(),
                        word: l.word.clone(),
                    });
                    return Err(ProcgenError::Readback {
                        key: name.into(),
                        problem: MEASURE.into(),
                    });
                };
                let clamped = self.alloc(&format!("{name}/clamped"), ColumnType::UInt, 1, 1);
                let guard = self.alloc(&format!("{name}/guard"), ColumnType::UInt, 2, 1);
                self.internal(
                    "procgen/clamp_guard",
                    CLAMP_GUARD_WGSL,
                    &ClampParams {
                        room: u32_count("room", room)?,
                    },
                    &[
                        (&l.word, Access::Read),
                        (&clamped.buffer, Access::ReadWrite),
                        (&guard.buffer, Access::ReadWrite),
                    ],
                    Grid::Workgroups([1, 1, 1]),
                )?;
                self.guards.push(GuardWord {
                    name: name.into(),
                    buffer: guard.buffer,
                    room,
                });
                Ok(Bounded::Live(LiveCount {
                    word: clamped.buffer,
                    capacity: room,
                }))
            }
        }
    }

    /// device.guard { value, flag, why }: a number flag refuses now when nonzero; a one-word
    /// column flag is held by the recording and read by the cook after each replay, which then
    /// refuses with `why`.
    pub fn guard<T>(&mut self, value: T, flag: GuardFlag, why: &str) -> Result<T> {
        match flag {
            GuardFlag::Number(0) => Ok(value),
            GuardFlag::Number(f) => Err(ProcgenError::Guard {
                why: why.into(),
                flag: f,
            }),
            GuardFlag::Column(c) => {
                self.guards.push(GuardWord {
                    name: format!("guard:{why}"),
                    buffer: c.buffer,
                    room: 0,
                });
                Ok(value)
            }
        }
    }
}

/// device.guard's flag.
#[derive(Clone, Debug)]
pub enum GuardFlag {
    /// A number the plan knows.
    Number(u32),
    /// A one-word column the device writes.
    Column(Column),
}

/// `cookrun.counts()`: what a [`Player`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Recordings made (the first, and one per re-record).
    pub recordings: u64,
    /// Runs of a recording (the first run of each included).
    pub replays: u64,
    /// Replays found, a cook later, to have run past a guard.
    pub guarded: u64,
    /// Counts read back to size a room (planning waits).
    pub measured: u64,
    /// Recordings made because a planning wait's count (arithmetic that takes a count away,
    /// read back) came to another number than the recording was planned with.
    pub replans: u64,
    /// Planning waits made by runs of recordings (each run reads every wait it holds).
    pub plan_waits: u64,
    /// Replays that took a new live number (device.bound with `live`) inside its room, written
    /// into the recorded count word instead of recording again.
    pub renumbered: u64,
    /// `traffic().deferredReads`: guard words a cook read from the replay before it, which
    /// has completed, so no frame was waited for.
    #[serde(rename = "deferredReads")]
    pub deferred_reads: u64,
}

/// The record/replay cook loop over a graph builder.
pub struct Player<T> {
    device: wgpu::Device,
    queue: wgpu::Queue,
    rooms: std::collections::BTreeMap<String, u64>,
    numbers: std::collections::BTreeMap<String, u64>,
    current: Option<(Recording, T)>,
    /// What the player did so far.
    pub counts: Counts,
    /// Where plans waited (measured counts), in order.
    pub waits: Vec<String>,
    /// The rooms in force, by bound name.
    pub room_log: Vec<(u64, String, u64)>,
}

impl<T> Player<T> {
    /// A player on `device`.
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        Self {
            device: device.clone(),
            queue: queue.clone(),
            rooms: Default::default(),
            numbers: Default::default(),
            current: None,
            counts: Counts::default(),
            waits: Vec::new(),
            room_log: Vec::new(),
        }
    }

    /// The outputs of the recording in force.
    pub fn outputs(&self) -> Option<&T> {
        self.current.as_ref().map(|(_, t)| t)
    }

    /// The recording in force (to read its outputs back).
    pub fn recording(&self) -> Option<&Recording> {
        self.current.as_ref().map(|(r, _)| r)
    }

    /// Lets the recording go: the next cook records again (a digest moved).
    pub fn invalidate(&mut self) {
        self.current = None;
    }

    /// Sets the number the live device.bound `name` (`live`, over a number) takes from the next
    /// cook on; the caller's build must bound the same number when it records. A recording
    /// over it runs again for every number inside the room it allocated (the next power of two
    /// at or above the recorded number), with the number written into its count word
    /// ([`Counts::renumbered`]), and is recorded again for a number outside it.
    pub fn set_number(&mut self, name: &str, n: u64) {
        self.numbers.insert(name.into(), n);
    }

    /// The room in force for bound `name`.
    pub fn room(&self, name: &str) -> Option<u64> {
        self.rooms.get(name).copied()
    }

    /// One cook of frame `frame`: reads the guards of the previous replay (re-recording with
    /// four times the room of each bound that outgrew it), records when there is no recording
    /// (`build`, measuring unsized counts first), otherwise writes this frame's inputs
    /// (`update`) and replays. A run reads each planning wait it holds again (listed in
    /// [`Player::waits`]); one that reads another number than the plan was made with stops
    /// there, and the cook records again (`Counts::replans`) and runs that recording.
    pub fn cook(
        &mut self,
        frame: u64,
        build: &mut dyn FnMut(&mut Cook, u64) -> Result<T>,
        update: &mut dyn FnMut(&wgpu::Queue, &T, u64) -> Result<bool>,
    ) -> Result<&T> {
        if let Some((rec, _)) = &self.current {
            let mut rerecord = false;
            for g in &rec.guards {
                let words = read_words(
                    &self.device,
                    &self.queue,
                    &g.buffer,
                    if g.room > 0 { 2 } else { 1 },
                )?;
                self.counts.deferred_reads += 1;
                if words[0] == 0 {
                    continue;
                }
                if g.room == 0 {
                    return Err(ProcgenError::Guard {
                        why: g.name.trim_start_matches("guard:").into(),
                        flag: words[0],
                    });
                }
                let grown = (g.room * 4).max(room_for(u64::from(words[1])));
                self.rooms.insert(g.name.clone(), grown);
                self.room_log.push((frame, g.name.clone(), grown));
                rerecord = true;
            }
            if rerecord {
                self.counts.guarded += 1;
                self.current = None;
            }
        }
        // A live number inside its room is written into the recording's word; one outside it
        // records again.
        if let Some((rec, _)) = &mut self.current {
            let mut renumbered = false;
            let mut outside = false;
            for l in &mut rec.live_numbers {
                let Some(&n) = self.numbers.get(&l.name) else {
                    continue;
                };
                if n == l.value {
                    continue;
                }
                if n > l.room {
                    outside = true;
                    break;
                }
                let word = u32_count(&l.name, n)?;
                self.queue
                    .write_buffer(&l.word, 0, bytemuck::bytes_of(&word));
                l.value = n;
                renumbered = true;
            }
            if outside {
                self.current = None;
            } else if renumbered {
                self.counts.renumbered += 1;
            }
        }
        // This frame's inputs go into the recorded columns; inputs of another shape record again.
        if let Some((_, t)) = &self.current {
            if !update(&self.queue, t, frame)? {
                self.current = None;
            }
        }
        // A run whose planning wait read another number than its plan stops there: plan again
        // (a count read back is deterministic for the same inputs, so this settles at once;
        // the bound keeps a nondeterministic graph from looping).
        for _ in 0..4 {
            if self.current.is_none() {
                let (rec, t) = self.record(frame, build)?;
                self.current = Some((rec, t));
                self.counts.recordings += 1;
            }
            let (rec, _) = self.current.as_mut().expect("recorded above");
            let run = rec.run()?;
            self.counts.replays += 1;
            self.counts.plan_waits += run.waits.len() as u64;
            self.waits
                .extend(run.waits.iter().map(|w| format!("frame {frame}: {w}")));
            match run.replan {
                None => return Ok(&self.current.as_ref().expect("ran above").1),
                Some((w, now)) => {
                    self.waits.push(format!(
                        "frame {frame}: `{}` came to {now}, not the {} planned for {}: planned again",
                        w.expr, w.value, w.node
                    ));
                    self.counts.replans += 1;
                    self.current = None;
                }
            }
        }
        Err(ProcgenError::Readback {
            key: "planning wait".into(),
            problem: "a count read back moved on every one of 4 plans in one cook".into(),
        })
    }

    fn record(
        &mut self,
        frame: u64,
        build: &mut dyn FnMut(&mut Cook, u64) -> Result<T>,
    ) -> Result<(Recording, T)> {
        loop {
            let mut cook = Cook::on(&self.device, &self.queue, "procgen");
            cook.rooms = self.rooms.clone();
            match build(&mut cook, frame) {
                Ok(t) => return Ok((cook.finish()?, t)),
                // The marker may come back wrapped (through a Luau script): the request is the cook's.
                Err(_) if cook.measure.is_some() => {
                    // Run what the cook recorded so far, read the count once, size its room.
                    let m = cook
                        .measure
                        .take()
                        .expect("a measure request carries its word");
                    let mut prefix = cook.finish()?;
                    prefix.run()?;
                    let count = u64::from(read_words(&self.device, &self.queue, &m.word, 1)?[0]);
                    let room = room_for(count).max(self.rooms.get(&m.name).copied().unwrap_or(0));
                    self.waits.push(format!(
                        "frame {frame}: measured `{}` = {count} to size its room ({room})",
                        m.name
                    ));
                    self.room_log.push((frame, m.name.clone(), room));
                    self.rooms.insert(m.name, room);
                    self.counts.measured += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
