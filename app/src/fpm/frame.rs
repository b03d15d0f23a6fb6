//! FPM framing (FRR's `fpm/fpm.h`): a 4-byte header — version 1, message
//! type 1 (netlink), a 16-bit big-endian length that includes the header —
//! then that many bytes less four of netlink messages.

use super::stats::Count;
use std::io::{self, Read};

pub const FPM_VERSION: u8 = 1;
pub const FPM_MSG_TYPE_NETLINK: u8 = 1;
pub const FPM_HEADER_LEN: usize = 4;
/// The largest frame the 16-bit length can say.
pub const FPM_MAX_FRAME: usize = u16::MAX as usize;

/// The body length a header announces, or why the stream cannot be
/// trusted past it (the connection is then closed: there is no way to find
/// the next frame).
pub fn parse_header(h: [u8; FPM_HEADER_LEN]) -> Result<usize, (Count, String)> {
    let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if h[0] != FPM_VERSION {
        return Err((
            Count::BadVersion,
            format!("FPM version {}, expected 1", h[0]),
        ));
    }
    if h[1] != FPM_MSG_TYPE_NETLINK {
        return Err((
            Count::BadType,
            format!(
                "FPM message type {}, expected 1 (netlink; zebra's dplane_fpm_nl sends no other)",
                h[1]
            ),
        ));
    }
    if len < FPM_HEADER_LEN {
        return Err((
            Count::BadLength,
            format!("FPM length {len}, below the header's 4 bytes"),
        ));
    }
    Ok(len - FPM_HEADER_LEN)
}

/// A frame around `body` (netlink messages).
pub fn frame(body: &[u8]) -> Vec<u8> {
    let len = u16::try_from(body.len() + FPM_HEADER_LEN).unwrap_or(u16::MAX);
    let mut out = vec![FPM_VERSION, FPM_MSG_TYPE_NETLINK];
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// What reading the next frame gave.
#[derive(Debug)]
pub enum Read1 {
    /// A frame's body.
    Body(Vec<u8>),
    /// A header that cannot be trusted: the stream is lost.
    Lost(Count, String),
    /// The peer closed the connection between frames.
    Closed,
}

/// Read one frame from `r`.
pub fn read_frame(r: &mut impl Read) -> io::Result<Read1> {
    let mut h = [0u8; FPM_HEADER_LEN];
    match r.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Read1::Closed),
        Err(e) => return Err(e),
    }
    let len = match parse_header(h) {
        Ok(len) => len,
        Err((c, why)) => return Ok(Read1::Lost(c, why)),
    };
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(Read1::Body(body))
}
