//! The rank-manager daemon's wire protocol decoder (`exec::remote::protocol`), from arbitrary
//! bytes: any local process can write to the daemon's socket, so decoding must never panic
//! nor allocate more than the message holds. Every input is decoded as a request and as a
//! reply (one of them, both, or neither succeeds); a message that decodes must encode back
//! to the same bytes (the format has one spelling per value, so nothing is dropped or
//! invented on the way), and the same bytes read as a stream of frames must come apart
//! into frames or end with an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openpim_runtime::exec::remote::protocol::{read_frame, Enc, Reply, Request};

/// Frames longer than this are refused by the reader under test (the daemon's own limit is
/// larger; a small one exercises the refusal).
const MAX: usize = 1 << 16;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Request::decode(data) {
        let mut e = Enc::default();
        r.encode(&mut e);
        assert_eq!(e.0, data, "request {r:?} re-encodes differently");
    }
    if let Ok(r) = Reply::decode(data) {
        let mut e = Enc::default();
        r.encode(&mut e);
        assert_eq!(e.0, data, "reply re-encodes differently");
    }
    let mut stream = data;
    for _ in 0..64 {
        match read_frame(&mut stream, MAX) {
            Ok(Some((_, body))) => {
                assert!(body.len() + 8 <= MAX);
                let _ = Request::decode(&body);
            }
            Ok(None) | Err(_) => break,
        }
    }
});
