//! The rank-manager daemon's wire protocol decoder (`exec::remote::protocol`), from arbitrary
//! bytes: any local process can write to the daemon's socket, so decoding must never panic
//! nor allocate more than the message holds. Every input is decoded as a request and as a
//! reply (one of them, both, or neither succeeds); a message that decodes must encode back
//! to the same bytes (the format has one spelling per value, so nothing is dropped or
//! invented on the way), and the same bytes read as a stream of frames must come apart
//! into frames or end with an error. The same bytes are also read as the request ring's
//! shared memory as the daemon sees it (a length word, then the request area, which a
//! hostile tenant may fill with anything): taking a frame out of it must never panic nor
//! read past the area, and what it takes must be a frame of exactly that length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openpim_runtime::exec::remote::protocol::{read_frame, Enc, Reply, Request};
use openpim_runtime::exec::remote::ring::{take_frame, AREA};

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
    if data.len() >= 4 {
        let len = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
        let area = &data[4..data.len().min(4 + AREA)];
        if let Ok((id, body)) = take_frame(len, area) {
            assert_eq!(len as usize, body.len() + 12, "a ring frame of another length");
            assert_eq!(&area[4..12], &id.to_le_bytes());
            let _ = Request::decode(&body);
        }
    }
});
