//! ReadbackRing on a real device: exhaustion, out-of-order completion, cancellation (with a
//! map in flight: the slot is never handed out mapped), destruction, device loss, and the
//! order of ticket operations.

mod common;

use common::*;
use gpugraph_command::wgpu::{self, BufferUsages as U};
use gpugraph_command::GpuContext;
use gpugraph_render::{ReadbackRing, RenderError, TicketStatus};

fn source(ctx: &GpuContext, words: &[u32]) -> wgpu::Buffer {
    upload(ctx, words, U::empty())
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytemuck::cast_slice(bytes).to_vec()
}

#[test]
fn exhaustion_is_immediate_and_waiting_never_hangs_on_live_tickets() {
    let ctx = ctx();
    let mut ring = ReadbackRing::new(&ctx.device, "ring", 2, 16);
    let a = ring.try_acquire().unwrap();
    let b = ring.try_acquire().unwrap();
    assert_ne!(a.slot(), b.slot());
    let e = ring.try_acquire().unwrap_err();
    assert!(
        matches!(e, RenderError::RingExhausted { slots: 2, .. }),
        "{e}"
    );
    let e = ring.acquire_waiting().unwrap_err();
    assert!(matches!(e, RenderError::RingExhausted { .. }), "{e}");
    // A cancelled ticket that never mapped frees its slot at once.
    let slot = a.slot();
    ring.cancel(a).unwrap();
    assert_eq!(ring.try_acquire().unwrap().slot(), slot);
    ring.cancel(b).unwrap();
}

#[test]
fn tickets_complete_and_read_out_of_order() {
    let ctx = ctx();
    let src = source(&ctx, &(0..64).collect::<Vec<u32>>());
    let mut ring = ReadbackRing::new(&ctx.device, "ring", 3, 32);
    let tickets: Vec<_> = (0..3).map(|_| ring.try_acquire().unwrap()).collect();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    for (i, t) in tickets.iter().enumerate() {
        ring.record_copy(t, &mut enc, &src, 32 * i as u64, 8 + 8 * i as u64)
            .unwrap();
    }
    // Mapping before the submission would fail it; the ring does not submit.
    assert_eq!(ring.status(&tickets[0]).unwrap(), TicketStatus::Recording);
    ctx.queue.submit([enc.finish()]);
    for t in &tickets {
        ring.request_map(t).unwrap();
    }
    let mut it = tickets.into_iter();
    let (t0, t1, t2) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    assert_eq!(words(&ring.wait(t2).unwrap()), vec![16, 17, 18, 19, 20, 21]);
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .unwrap();
    assert_eq!(ring.status(&t0).unwrap(), TicketStatus::Ready);
    assert_eq!(words(&ring.read(t0).unwrap()), vec![0, 1]);
    assert_eq!(words(&ring.read(t1).unwrap()), vec![8, 9, 10, 11]);
}

#[test]
fn a_slot_mapping_when_cancelled_is_parked_until_unmapped() {
    let ctx = ctx();
    let src = source(&ctx, &[7; 8]);
    let mut ring = ReadbackRing::new(&ctx.device, "ring", 1, 16);
    let t = ring.try_acquire().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    ring.record_copy(&t, &mut enc, &src, 0, 16).unwrap();
    ctx.queue.submit([enc.finish()]);
    ring.request_map(&t).unwrap();
    ring.cancel(t).unwrap();
    // The only slot is parked behind its map (or, if lavapipe already finished the map, free
    // and unmapped). Either way the next ticket's slot must not be mapped: copy into it again.
    let t = ring.acquire_waiting().unwrap();
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let src2 = source(&ctx, &[9; 8]);
    ring.record_copy(&t, &mut enc, &src2, 0, 16).unwrap();
    ctx.queue.submit([enc.finish()]);
    ring.request_map(&t).unwrap();
    assert_eq!(words(&ring.wait(t).unwrap()), vec![9; 4]);
}

#[test]
fn ticket_operations_out_of_order_are_named_errors() {
    let ctx = ctx();
    let src = source(&ctx, &[1; 8]);
    let mut ring = ReadbackRing::new(&ctx.device, "ring", 2, 16);
    let t = ring.try_acquire().unwrap();
    let e = ring.request_map(&t).unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::TicketState {
                state: "without a copy",
                ..
            }
        ),
        "{e}"
    );
    let mut enc = ctx.device.create_command_encoder(&Default::default());
    let e = ring.record_copy(&t, &mut enc, &src, 0, 20).unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::ReadbackRange {
                bytes: 20,
                slot_bytes: 16,
                ..
            }
        ),
        "{e}"
    );
    let e = ring.record_copy(&t, &mut enc, &src, 2, 4).unwrap_err();
    assert!(matches!(e, RenderError::ReadbackRange { .. }), "{e}");
    ring.record_copy(&t, &mut enc, &src, 16, 16).unwrap();
    let e = ring.record_copy(&t, &mut enc, &src, 0, 4).unwrap_err();
    assert!(matches!(e, RenderError::TicketState { .. }), "{e}");
    ctx.queue.submit([enc.finish()]);
    ring.request_map(&t).unwrap();
    let slot = t.slot();
    let data = ring.wait(t).unwrap();
    assert_eq!(words(&data), vec![1; 4]);
    // A consumed ticket cannot come back: forge one through a fresh acquire of the same slot.
    let again = ring.try_acquire().unwrap();
    assert_eq!(again.slot(), slot);
    ring.cancel(again).unwrap();
    let unread = ring.try_acquire().unwrap();
    let e = ring.read(unread).unwrap_err();
    assert!(
        matches!(
            e,
            RenderError::TicketState {
                state: "not mapped",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn destruction_and_device_loss_fail_every_later_call_by_name() {
    let ctx = ctx();
    let src = source(&ctx, &[3; 4]);
    let mut ring = ReadbackRing::new(&ctx.device, "ring", 2, 16);
    let t = ring.try_acquire().unwrap();
    ring.destroy();
    ring.destroy();
    let e = ring.cancel(t).unwrap_err();
    assert!(matches!(e, RenderError::RingDestroyed { .. }), "{e}");
    assert!(matches!(
        ring.try_acquire(),
        Err(RenderError::RingDestroyed { .. })
    ));

    let mut ring = ReadbackRing::new(&ctx.device, "ring", 2, 16);
    let t = ring.try_acquire().unwrap();
    ring.mark_lost("device lost (test)");
    let e = ring.status(&t).unwrap_err();
    assert!(
        matches!(&e, RenderError::ReadbackFailed { message, .. } if message.contains("device lost")),
        "{e}"
    );

    // A real loss: the device is destroyed while a map is pending; the ticket fails by name.
    let lost = common::ctx();
    let src_lost = source(&lost, &[5; 4]);
    let mut ring = ReadbackRing::new(&lost.device, "lost", 1, 16);
    let t = ring.try_acquire().unwrap();
    let mut enc = lost.device.create_command_encoder(&Default::default());
    ring.record_copy(&t, &mut enc, &src_lost, 0, 16).unwrap();
    lost.queue.submit([enc.finish()]);
    lost.device.destroy();
    ring.request_map(&t).unwrap();
    let e = ring.wait(t).unwrap_err();
    assert!(
        matches!(e, RenderError::ReadbackFailed { slot: 0, .. }),
        "{e}"
    );
    let _ = src;
}
