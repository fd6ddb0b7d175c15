//! The listener: one thread per process that serves the stopped DPUs one at a time, each to
//! one debugger connection.

use std::net::TcpListener;
use std::sync::mpsc::{channel, Receiver, Sender};

use gdbstub::stub::{DisconnectReason, GdbStub};

use super::conn::DpuConnection;
use super::link::{Attach, StopKind};
use super::target::{DpuLoop, RemoteDpu};

/// A DPU waiting for its debugger.
pub(crate) type Queued = Attach;

/// Starts the server thread on `listener`; DPUs that stop send themselves on the result.
pub(crate) fn spawn(listener: TcpListener, addr: String) -> Sender<Queued> {
    let (tx, rx) = channel();
    let spawned = std::thread::Builder::new()
        .name("openpim-gdb".into())
        .spawn(move || serve(&listener, &addr, &rx));
    if let Err(e) = spawned {
        // Without the thread every DPU that stops finds the channel closed and runs on.
        eprintln!("openpim: the GDB server could not start a thread ({e}); DPUs run without it");
    }
    tx
}

fn serve(listener: &TcpListener, addr: &str, queue: &Receiver<Queued>) {
    for attach in queue {
        let why = match attach.first.kind {
            StopKind::Fault(sig) => {
                format!("at a fault ({sig}) of tasklet {}", attach.first.tasklet)
            }
            _ => "before the first instruction of its launch".to_string(),
        };
        let program = attach
            .site
            .program
            .origin()
            .unwrap_or("PROGRAM")
            .to_string();
        eprintln!(
            "openpim: DPU {}.{} stopped {why}; waiting for a debugger on {addr}: gdb-multiarch {program} -ex 'target remote {addr}'",
            attach.site.rank, attach.site.dpu
        );
        let mut dpu = RemoteDpu::new(attach);
        loop {
            let Ok((stream, _)) = listener.accept() else {
                continue;
            };
            // A connection closed before any packet (a port probe) changes nothing.
            let mut first = [0u8; 1];
            if !matches!(stream.peek(&mut first), Ok(1)) {
                continue;
            }
            let _ = stream.set_nodelay(true);
            let first = dpu.attach.first;
            let signal = match first.kind {
                StopKind::Fault(sig) => sig.0,
                _ => gdbstub::common::Signal::SIGTRAP.0,
            };
            let conn = DpuConnection::new(stream, signal, first.tasklet as usize + 1);
            let ended = match GdbStub::new(conn).run_blocking::<DpuLoop>(&mut dpu) {
                Ok(DisconnectReason::TargetExited(_) | DisconnectReason::TargetTerminated(_)) => {
                    true
                }
                Ok(DisconnectReason::Disconnect | DisconnectReason::Kill) | Err(_) => false,
            };
            if !ended && !dpu.ended {
                dpu.detach();
            }
            break;
        }
    }
}
