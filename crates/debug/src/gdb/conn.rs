//! The debugger's connection, with the first stop reason told as it is.
//!
//! `gdbstub` answers GDB's first `?` (why is the target stopped?) with a plain SIGTRAP of the
//! first thread. A DPU stopped at a fault must say the fault's signal and the faulting tasklet,
//! so this connection answers that one packet itself and hands every other byte to `gdbstub`
//! unchanged.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpStream;

use gdbstub::conn::{Connection, ConnectionExt};

pub struct DpuConnection {
    stream: TcpStream,
    /// Bytes read ahead (a packet that was not the one answered here).
    ahead: VecDeque<u8>,
    /// The stop reply for the first `?`: signal and thread id (tasklet + 1).
    first: Option<(u8, usize)>,
    /// GDB asked for no acknowledgements (`QStartNoAckMode`).
    no_ack: bool,
    /// GDB speaks the multiprocess extensions (thread ids as `pPID.TID`).
    multiprocess: bool,
}

impl DpuConnection {
    pub fn new(stream: TcpStream, signal: u8, tid: usize) -> Self {
        DpuConnection {
            stream,
            ahead: VecDeque::new(),
            first: Some((signal, tid)),
            no_ack: false,
            multiprocess: false,
        }
    }

    fn byte(&mut self) -> std::io::Result<u8> {
        if let Some(b) = self.ahead.pop_front() {
            return Ok(b);
        }
        self.stream.set_nonblocking(false)?;
        let mut b = [0u8];
        self.stream.read_exact(&mut b)?;
        Ok(b[0])
    }

    /// Reads a packet's body and checksum after its `$`.
    fn packet(&mut self) -> std::io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let b = self.byte()?;
            body.push(b);
            if b == b'#' {
                body.push(self.byte()?);
                body.push(self.byte()?);
                return Ok(body);
            }
        }
    }

    fn answer_first(&mut self, signal: u8, tid: usize) -> std::io::Result<()> {
        let thread = if self.multiprocess {
            format!("p1.{tid:x}")
        } else {
            format!("{tid:x}")
        };
        let body = format!("T{signal:02x}thread:{thread};");
        let sum = body.bytes().fold(0u8, |s, b| s.wrapping_add(b));
        let ack = if self.no_ack { "" } else { "+" };
        write!(self.stream, "{ack}${body}#{sum:02x}")?;
        Write::flush(&mut self.stream)
    }
}

impl Connection for DpuConnection {
    type Error = std::io::Error;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        Write::write_all(&mut self.stream, &[byte])
    }

    fn write_all(&mut self, buf: &[u8]) -> Result<(), Self::Error> {
        Write::write_all(&mut self.stream, buf)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Write::flush(&mut self.stream)
    }

    fn on_session_start(&mut self) -> Result<(), Self::Error> {
        TcpStream::set_nodelay(&self.stream, true)
    }
}

impl ConnectionExt for DpuConnection {
    fn read(&mut self) -> Result<u8, Self::Error> {
        loop {
            let b = self.byte()?;
            // Packets read ahead go to gdbstub as they came; only fresh ones are looked at.
            if b != b'$' || self.first.is_none() || !self.ahead.is_empty() {
                return Ok(b);
            }
            let body = self.packet()?;
            let text = &body[..body.len() - 3];
            if text.starts_with(b"qSupported") {
                self.multiprocess = text.windows(13).any(|w| w == b"multiprocess+");
            }
            if text == b"QStartNoAckMode" {
                self.no_ack = true;
            }
            if text == b"?" {
                if let Some((signal, tid)) = self.first.take() {
                    self.answer_first(signal, tid)?;
                    continue;
                }
            }
            self.ahead.extend(body);
            return Ok(b'$');
        }
    }

    fn peek(&mut self) -> Result<Option<u8>, Self::Error> {
        if let Some(&b) = self.ahead.front() {
            return Ok(Some(b));
        }
        self.stream.set_nonblocking(true)?;
        let mut b = [0u8];
        let r = match self.stream.peek(&mut b) {
            Ok(0) => Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => Ok(Some(b[0])),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        };
        self.stream.set_nonblocking(false)?;
        r
    }
}
