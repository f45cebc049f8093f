//! The request-response messages vaults send each other, in the chain's
//! canonical encoding, and the libp2p codec that frames them: a 4-byte
//! length, then the message, on a stream of its own.

use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use libp2p::StreamProtocol;
use spacevault_chain::codec::{DecodeError, Reader, Writer};
use spacevault_chain::locator::MAX_LOCATOR;
use spacevault_chain::Receipt;
use std::io;

/// The request-response protocol's name; version 2 added
/// [`Request::Locate`], version 3 [`Request::Slots`], version 4 the line
/// a [`Request::Slots`] asks for, version 5 [`Request::Audit`].
pub const PROTOCOL: StreamProtocol = StreamProtocol::new("/spacevault/req/6");

/// Bytes of a [`Response::Slice`] at most: a chunk and a parent pair for
/// each of 64 levels, more than any blob's tree has.
pub const MAX_SLICE_BYTES: usize = 1024 + 64 * 64;

/// The largest message either way: a batch of blocks or a blob, with room
/// for framing.
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// Blocks a [`Request::Blocks`] answer holds at most.
pub const MAX_BLOCKS_PER_REQUEST: u32 = 256;

/// Slots a [`Request::Slots`] answer holds at most.
pub const MAX_SLOTS_PER_REQUEST: u32 = 256;

/// Bytes of one slot's output in a [`Response::Slots`] at most (a
/// SlotOutput is 242).
pub const MAX_SLOT_BYTES: usize = 512;

/// What a vault asks another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Its canonical head.
    Status,
    /// Its canonical blocks from `from`, at most `max`.
    Blocks { from: u64, max: u32 },
    /// Keep this blob and sign a receipt for it.
    Store { blob: Vec<u8> },
    /// The blob at this address, if it keeps it.
    Fetch { address: [u8; 32] },
    /// Its canonical blocks after the first of these hashes that is
    /// canonical there (a block locator, highest first:
    /// [`spacevault_chain::locator`]), from height 1 if none is; at most
    /// `max`.
    Locate { locator: Vec<[u8; 32]>, max: u32 },
    /// The proof of time's slots it has checked of line `line` (an era's
    /// seed) from `from`, at most `max`, in order.
    Slots { line: [u8; 32], from: u64, max: u32 },
    /// Prove it keeps this blob: its chunk `chunk` as a verified slice
    /// ([`spacevault_chain::audit`]).
    Audit { address: [u8; 32], chunk: u64 },
}

/// What it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Status {
        height: u64,
        head: [u8; 32],
    },
    /// Encoded blocks, oldest first.
    Blocks(Vec<Vec<u8>>),
    Stored(Receipt),
    Blob(Vec<u8>),
    NotFound,
    /// The request was refused, and why.
    Refused(String),
    /// Encoded slot outputs, in order.
    Slots(Vec<Vec<u8>>),
    /// A chunk of a blob and the tree nodes that tie it to the address.
    Slice(Vec<u8>),
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match self {
            Request::Status => {
                w.u8(0);
            }
            Request::Blocks { from, max } => {
                w.u8(1).u64(*from).u32(*max);
            }
            Request::Store { blob } => {
                w.u8(2).bytes(blob);
            }
            Request::Fetch { address } => {
                w.u8(3).fixed(address);
            }
            Request::Locate { locator, max } => {
                w.u8(4).u32(locator.len() as u32);
                for hash in locator {
                    w.fixed(hash);
                }
                w.u32(*max);
            }
            Request::Slots { line, from, max } => {
                w.u8(5).fixed(line).u64(*from).u32(*max);
            }
            Request::Audit { address, chunk } => {
                w.u8(6).fixed(address).u64(*chunk);
            }
        }
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Request, DecodeError> {
        let mut r = Reader::new(bytes);
        let request = match r.u8("request kind")? {
            0 => Request::Status,
            1 => Request::Blocks {
                from: r.u64("from")?,
                max: r.u32("max")?,
            },
            2 => Request::Store {
                blob: r.bytes("blob", MAX_MESSAGE_BYTES)?.to_vec(),
            },
            3 => Request::Fetch {
                address: r.array("address")?,
            },
            4 => {
                let n = r.count("locator", MAX_LOCATOR, 32)?;
                let locator = (0..n)
                    .map(|_| r.array("locator hash"))
                    .collect::<Result<_, _>>()?;
                Request::Locate {
                    locator,
                    max: r.u32("max")?,
                }
            }
            5 => Request::Slots {
                line: r.array("line")?,
                from: r.u64("from")?,
                max: r.u32("max")?,
            },
            6 => Request::Audit {
                address: r.array("address")?,
                chunk: r.u64("chunk")?,
            },
            kind => {
                return Err(DecodeError::UnknownKind {
                    what: "request",
                    kind,
                })
            }
        };
        r.finish()?;
        Ok(request)
    }
}

impl Response {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match self {
            Response::Status { height, head } => {
                w.u8(0).u64(*height).fixed(head);
            }
            Response::Blocks(blocks) => {
                w.u8(1).u32(blocks.len() as u32);
                for b in blocks {
                    w.bytes(b);
                }
            }
            Response::Stored(receipt) => {
                w.u8(2);
                receipt.encode_into(&mut w);
            }
            Response::Blob(blob) => {
                w.u8(3).bytes(blob);
            }
            Response::NotFound => {
                w.u8(4);
            }
            Response::Refused(why) => {
                w.u8(5).bytes(why.as_bytes());
            }
            Response::Slots(slots) => {
                w.u8(6).u32(slots.len() as u32);
                for s in slots {
                    w.bytes(s);
                }
            }
            Response::Slice(slice) => {
                w.u8(7).bytes(slice);
            }
        }
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Response, DecodeError> {
        let mut r = Reader::new(bytes);
        let response = match r.u8("response kind")? {
            0 => Response::Status {
                height: r.u64("height")?,
                head: r.array("head")?,
            },
            1 => {
                let n = r.count("blocks", MAX_BLOCKS_PER_REQUEST as usize, 4)?;
                let blocks = (0..n)
                    .map(|_| r.bytes("block", MAX_MESSAGE_BYTES).map(<[u8]>::to_vec))
                    .collect::<Result<_, _>>()?;
                Response::Blocks(blocks)
            }
            2 => Response::Stored(Receipt::decode_from(&mut r)?),
            3 => Response::Blob(r.bytes("blob", MAX_MESSAGE_BYTES)?.to_vec()),
            4 => Response::NotFound,
            5 => Response::Refused(
                String::from_utf8(r.bytes("reason", 1024)?.to_vec())
                    .map_err(|_| DecodeError::Invalid("a refusal's reason is not UTF-8"))?,
            ),
            6 => {
                let n = r.count("slots", MAX_SLOTS_PER_REQUEST as usize, 4)?;
                let slots = (0..n)
                    .map(|_| r.bytes("slot", MAX_SLOT_BYTES).map(<[u8]>::to_vec))
                    .collect::<Result<_, _>>()?;
                Response::Slots(slots)
            }
            7 => Response::Slice(r.bytes("slice", MAX_SLICE_BYTES)?.to_vec()),
            kind => {
                return Err(DecodeError::UnknownKind {
                    what: "response",
                    kind,
                })
            }
        };
        r.finish()?;
        Ok(response)
    }
}

/// What the fuzz target `wire` and its property test check: decoding
/// untrusted bytes never panics, and what decodes is in its canonical form.
#[doc(hidden)]
pub fn check_decoders(data: &[u8]) {
    if let Ok(request) = Request::decode(data) {
        assert_eq!(request.encode(), data, "a request in a non-canonical form");
    }
    if let Ok(response) = Response::decode(data) {
        assert_eq!(
            response.encode(),
            data,
            "a response in a non-canonical form"
        );
        if let Response::Stored(receipt) = response {
            let _ = receipt.verify(&[0; 32]);
        }
    }
}

/// Frames requests and responses on their streams.
#[derive(Clone, Copy, Debug, Default)]
pub struct WireCodec;

async fn read_frame<T: AsyncRead + Unpin + Send>(io: &mut T) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    io.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_MESSAGE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {len} bytes is over the {MAX_MESSAGE_BYTES} allowed"),
        ));
    }
    let mut buf = vec![0u8; len];
    io.read_exact(&mut buf).await?;
    Ok(buf)
}

async fn write_frame<T: AsyncWrite + Unpin + Send>(io: &mut T, bytes: &[u8]) -> io::Result<()> {
    io.write_all(&(bytes.len() as u32).to_le_bytes()).await?;
    io.write_all(bytes).await?;
    io.close().await
}

fn invalid(e: DecodeError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl libp2p::request_response::Codec for WireCodec {
    type Protocol = StreamProtocol;
    type Request = Request;
    type Response = Response;

    async fn read_request<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Request>
    where
        T: AsyncRead + Unpin + Send,
    {
        Request::decode(&read_frame(io).await?).map_err(invalid)
    }

    async fn read_response<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Response>
    where
        T: AsyncRead + Unpin + Send,
    {
        Response::decode(&read_frame(io).await?).map_err(invalid)
    }

    async fn write_request<T>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        req: Request,
    ) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_frame(io, &req.encode()).await
    }

    async fn write_response<T>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        res: Response,
    ) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_frame(io, &res.encode()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::Keypair;

    #[test]
    fn every_message_round_trips_and_cuts_are_caught() {
        let receipt = Receipt::sign(&Keypair::from_secret(&[1; 32]), &[2; 32], 4, &[3; 32]);
        let requests = [
            Request::Status,
            Request::Blocks { from: 7, max: 20 },
            Request::Store {
                blob: vec![1, 2, 3],
            },
            Request::Fetch { address: [9; 32] },
            Request::Locate {
                locator: vec![[5; 32], [6; 32]],
                max: 256,
            },
        ];
        for r in requests {
            let bytes = r.encode();
            assert_eq!(Request::decode(&bytes).unwrap(), r);
            for cut in 0..bytes.len() {
                assert!(Request::decode(&bytes[..cut]).is_err());
            }
        }
        let responses = [
            Response::Status {
                height: 3,
                head: [4; 32],
            },
            Response::Blocks(vec![vec![1], vec![2, 3]]),
            Response::Stored(receipt),
            Response::Blob(vec![5; 10]),
            Response::NotFound,
            Response::Refused("too large".into()),
        ];
        for r in responses {
            let bytes = r.encode();
            assert_eq!(Response::decode(&bytes).unwrap(), r);
            for cut in 0..bytes.len() {
                assert!(Response::decode(&bytes[..cut]).is_err());
            }
        }
        assert!(Request::decode(&[9]).is_err());
        // A locator longer than allowed is refused before it is read.
        let mut long = vec![4u8];
        long.extend_from_slice(&(MAX_LOCATOR as u32 + 1).to_le_bytes());
        long.resize(long.len() + 32 * (MAX_LOCATOR + 1) + 4, 0);
        assert!(Request::decode(&long).is_err());
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_before_it_is_read() {
        let frame = |len: usize, body: usize| {
            let mut bytes = (len as u32).to_le_bytes().to_vec();
            bytes.resize(4 + body, 7);
            futures::io::Cursor::new(bytes)
        };
        let over = futures::executor::block_on(read_frame(&mut frame(MAX_MESSAGE_BYTES + 1, 16)));
        let e = over.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("over the"), "{e}");
        let at = futures::executor::block_on(read_frame(&mut frame(
            MAX_MESSAGE_BYTES,
            MAX_MESSAGE_BYTES,
        )));
        assert_eq!(at.unwrap().len(), MAX_MESSAGE_BYTES);
        // A frame cut short is an error too, not a shorter message.
        let cut = futures::executor::block_on(read_frame(&mut frame(100, 99)));
        assert_eq!(cut.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }
}
