//! Distance between vaults on one machine: each node holds back what it
//! reads from a peer for the one-way delay between their regions, with
//! jitter, and no faster than a bandwidth cap, so that a network on one
//! host behaves as one spread over a continent or the globe.
//!
//! The delay is applied where a node reads each multiplexed stream of a
//! connection (every protocol message travels on one), for the in-memory
//! transport and TCP alike; this machine's kernel has no netem, and the
//! same profile then works in one process and across processes. Because
//! both ends delay what they read, a request and its response cost the
//! round trip of the two regions. Connection setup (the TCP and noise
//! handshakes) is not delayed: a network that keeps its connections open
//! pays it once.

use futures::{AsyncRead, AsyncWrite};
use libp2p::core::muxing::{StreamMuxer, StreamMuxerBox, StreamMuxerEvent};
use libp2p::PeerId;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

/// Where every vault of a network is, and how far apart the places are.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkProfile {
    /// The regions' names, for reports.
    pub regions: Vec<String>,
    /// One-way delay from region `i` to region `j`.
    pub one_way: Vec<Vec<Duration>>,
    /// Each delay varies by up to this fraction either way, uniformly.
    pub jitter: f64,
    /// What one connection carries each way per second; none: unlimited.
    pub bytes_per_second: Option<u64>,
    /// Each vault's region, by peer id.
    pub placement: HashMap<PeerId, usize>,
}

/// How the link to one peer behaves, as seen from one node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShape {
    pub one_way: Duration,
    pub jitter: f64,
    pub bytes_per_second: Option<u64>,
}

impl LinkProfile {
    /// The link from `remote` to `local`; none where either is not placed.
    pub fn link(&self, local: &PeerId, remote: &PeerId) -> Option<LinkShape> {
        let to = *self.placement.get(local)?;
        let from = *self.placement.get(remote)?;
        Some(LinkShape {
            one_way: *self.one_way.get(from)?.get(to)?,
            jitter: self.jitter,
            bytes_per_second: self.bytes_per_second,
        })
    }
}

/// A new connection's muxer, held at the profile's distance from its peer
/// where there is a profile that places both.
pub fn hold<M>(
    profile: Option<&LinkProfile>,
    local: &PeerId,
    remote: &PeerId,
    muxer: M,
) -> StreamMuxerBox
where
    M: StreamMuxer + Send + Unpin + 'static,
    M::Substream: Send + Unpin + 'static,
    M::Error: Send + Sync + 'static,
{
    match profile.and_then(|p| p.link(local, remote)) {
        Some(shape) => StreamMuxerBox::new(DelayedMuxer::new(muxer, shape)),
        None => StreamMuxerBox::new(muxer),
    }
}

/// A connection's muxer whose streams deliver what they read late.
pub struct DelayedMuxer<M> {
    inner: M,
    link: Arc<Link>,
}

/// One connection's link: its shape, and when its (capped) pipe is next
/// free, shared by all the connection's streams.
struct Link {
    shape: LinkShape,
    pipe_free_at: Mutex<Instant>,
}

impl<M> DelayedMuxer<M> {
    pub fn new(inner: M, shape: LinkShape) -> DelayedMuxer<M> {
        DelayedMuxer {
            inner,
            link: Arc::new(Link {
                shape,
                pipe_free_at: Mutex::new(Instant::now()),
            }),
        }
    }
}

impl<M: StreamMuxer + Unpin> StreamMuxer for DelayedMuxer<M>
where
    M::Substream: Unpin,
{
    type Substream = Delayed<M::Substream>;
    type Error = M::Error;

    fn poll_inbound(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::Substream, Self::Error>> {
        let this = self.get_mut();
        Pin::new(&mut this.inner)
            .poll_inbound(cx)
            .map_ok(|s| Delayed::new(s, this.link.clone()))
    }

    fn poll_outbound(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::Substream, Self::Error>> {
        let this = self.get_mut();
        Pin::new(&mut this.inner)
            .poll_outbound(cx)
            .map_ok(|s| Delayed::new(s, this.link.clone()))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<StreamMuxerEvent, Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll(cx)
    }
}

/// A stream whose reads are released at the time the bytes would have
/// arrived over the link; writes pass straight through (the other end's
/// reads delay them).
pub struct Delayed<S> {
    inner: S,
    link: Arc<Link>,
    /// Bytes read from `inner`, each chunk with its release time, in order.
    queue: VecDeque<(Instant, Vec<u8>)>,
    /// Bytes of the queue's first chunk already handed out.
    taken: usize,
    /// Releases never go back in time, whatever the jitter.
    last_release: Instant,
    /// The end of the stream, or its failure, once everything before it
    /// has been released.
    end: Option<(Instant, Option<io::Error>)>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    random: u64,
}

static SEEDS: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

impl<S> Delayed<S> {
    fn new(inner: S, link: Arc<Link>) -> Delayed<S> {
        Delayed {
            inner,
            link,
            queue: VecDeque::new(),
            taken: 0,
            last_release: Instant::now(),
            end: None,
            timer: None,
            random: SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed),
        }
    }

    /// A uniform draw in [-1, 1] (splitmix64: jitter needs no more).
    fn draw(&mut self) -> f64 {
        self.random = self.random.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.random;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    /// When `bytes` read now reach this end: after the pipe has carried
    /// them at the capped rate, and the delay.
    fn release_time(&mut self, bytes: usize) -> Instant {
        let now = Instant::now();
        let shape = self.link.shape;
        let arrived = match shape.bytes_per_second {
            Some(rate) if rate > 0 => {
                let mut free = self.link.pipe_free_at.lock().unwrap();
                let done = (*free).max(now) + Duration::from_secs_f64(bytes as f64 / rate as f64);
                *free = done;
                done
            }
            _ => now,
        };
        let delay = shape.one_way.as_secs_f64() * (1.0 + shape.jitter * self.draw());
        let at = (arrived + Duration::from_secs_f64(delay.max(0.0))).max(self.last_release);
        self.last_release = at;
        at
    }

    /// Waits for `at`; true once it has come. tokio's timers fire on the
    /// first millisecond tick at or after their deadline: aimed half a
    /// millisecond early, a release is off by at most half a millisecond
    /// either way instead of up to a whole one late each way.
    fn reached(&mut self, at: Instant, cx: &mut Context<'_>) -> bool {
        let at = at.checked_sub(Duration::from_micros(500)).unwrap_or(at);
        if at <= Instant::now() {
            return true;
        }
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if timer.deadline() != at {
            timer.as_mut().reset(at);
        }
        timer.as_mut().poll(cx).is_ready()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Delayed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Take in whatever has come, stamped with its release time.
        while this.end.is_none() {
            let mut chunk = [0u8; 16 * 1024];
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
                Poll::Ready(Ok(0)) => this.end = Some((this.release_time(0), None)),
                Poll::Ready(Ok(n)) => {
                    let at = this.release_time(n);
                    this.queue.push_back((at, chunk[..n].to_vec()));
                }
                Poll::Ready(Err(e)) => this.end = Some((this.release_time(0), Some(e))),
                Poll::Pending => break,
            }
        }
        if let Some((at, _)) = this.queue.front() {
            let at = *at;
            if !this.reached(at, cx) {
                return Poll::Pending;
            }
            let (_, data) = this.queue.front().expect("looked at above");
            let n = buf.len().min(data.len() - this.taken);
            buf[..n].copy_from_slice(&data[this.taken..this.taken + n]);
            this.taken += n;
            if this.taken == data.len() {
                this.queue.pop_front();
                this.taken = 0;
            }
            return Poll::Ready(Ok(n));
        }
        let Some((at, _)) = &this.end else {
            return Poll::Pending;
        };
        let at = *at;
        if !this.reached(at, cx) {
            return Poll::Pending;
        }
        let failure = this.end.as_mut().and_then(|(_, e)| e.take());
        Poll::Ready(match failure {
            Some(e) => Err(e),
            // Still the end on later reads: `end` stays.
            None => Ok(0),
        })
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Delayed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{AsyncReadExt, AsyncWriteExt};

    fn link(one_way_ms: u64, jitter: f64, bytes_per_second: Option<u64>) -> Arc<Link> {
        Arc::new(Link {
            shape: LinkShape {
                one_way: Duration::from_millis(one_way_ms),
                jitter,
                bytes_per_second,
            },
            pipe_free_at: Mutex::new(Instant::now()),
        })
    }

    /// A pipe whose far end reads through `Delayed`.
    fn pipe(link: Arc<Link>) -> (impl AsyncWrite + Unpin, Delayed<impl AsyncRead + Unpin>) {
        let (a, b) = tokio::io::duplex(1 << 20);
        use tokio_util::compat::TokioAsyncReadCompatExt;
        (a.compat(), Delayed::new(b.compat(), link))
    }

    /// Timers are aimed this much early (see `Delayed::reached`).
    const AIMED_EARLY: Duration = Duration::from_micros(500);

    /// Float seconds turned into a `Duration` may be a nanosecond off.
    const ROUNDING: Duration = Duration::from_micros(1);

    #[test]
    fn each_release_is_the_delay_within_its_jitter_and_never_before_the_last() {
        let mut rx = Delayed::new(futures::io::empty(), link(60, 0.3, None));
        let (shortest, longest) = (Duration::from_millis(42), Duration::from_millis(78));
        let mut last = Instant::now();
        for _ in 0..1000 {
            let before = Instant::now();
            let at = rx.release_time(100);
            let after = Instant::now();
            assert!(at + ROUNDING >= before + shortest, "released early");
            assert!(at >= last, "released before an earlier read");
            assert!(
                at <= (after + longest + ROUNDING).max(last),
                "held past the jitter's bound"
            );
            last = at;
        }
        // The jitter is used, not a fixed delay: the first reads of fresh
        // links (later reads are held behind the slowest before them, so
        // they tell little of the draws) spread over most of its range.
        let firsts: Vec<f64> = (0..50)
            .map(|_| {
                let mut rx = Delayed::new(futures::io::empty(), link(60, 0.3, None));
                let before = Instant::now();
                (rx.release_time(100) - before).as_secs_f64()
            })
            .collect();
        let spread = firsts.iter().cloned().fold(f64::MIN, f64::max)
            - firsts.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread > 0.02, "delays {firsts:?}");
    }

    #[test]
    fn a_capped_link_releases_each_read_once_the_pipe_has_carried_it() {
        // 13 reads of 16 KiB at 1 MiB/s, each 1/64 s, and 1 ms of delay:
        // the last is released 13/64 s + 1 ms after the first was read,
        // however long the reads in between took.
        let mut rx = Delayed::new(futures::io::empty(), link(1, 0.0, Some(1 << 20)));
        let carried = Duration::from_secs_f64(13.0 / 64.0) + Duration::from_millis(1);
        let before = Instant::now();
        let mut at = before;
        for _ in 0..13 {
            at = rx.release_time(16 * 1024);
        }
        let after = Instant::now();
        assert!(at + ROUNDING >= before + carried, "faster than the cap");
        assert!(at <= after + carried + ROUNDING, "slower than the cap");
    }

    #[tokio::test]
    async fn bytes_arrive_after_the_delay_in_order_and_the_end_after_them() {
        let (mut tx, mut rx) = pipe(link(60, 0.3, None));
        let sent = Instant::now();
        for i in 0..50u8 {
            tx.write_all(&[i; 100]).await.unwrap();
        }
        tx.close().await.unwrap();
        drop(tx);
        let mut got = Vec::new();
        rx.read_to_end(&mut got).await.unwrap();
        let took = sent.elapsed();
        let expected: Vec<u8> = (0..50u8).flat_map(|i| [i; 100]).collect();
        assert_eq!(got, expected, "every byte, in order, despite the jitter");
        // No upper bound: a busy machine may wake the reader late.
        assert!(
            took >= Duration::from_millis(42) - AIMED_EARLY,
            "released early: {took:?}"
        );
    }

    #[tokio::test]
    async fn a_capped_link_carries_no_more_than_its_rate() {
        // 200 KiB at 1 MiB/s: 195 ms, whatever the delay.
        let (mut tx, mut rx) = pipe(link(1, 0.0, Some(1 << 20)));
        let sent = Instant::now();
        let data = vec![7u8; 200 * 1024];
        let writer = tokio::spawn(async move {
            tx.write_all(&data).await.unwrap();
            tx.close().await.unwrap();
        });
        let mut got = Vec::new();
        rx.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        let took = sent.elapsed();
        assert_eq!(got.len(), 200 * 1024);
        let carried = Duration::from_secs_f64(200.0 / 1024.0);
        assert!(took >= carried - AIMED_EARLY, "took {took:?}");
    }

    #[test]
    fn an_undelayed_link_is_a_plain_pipe() {
        // What has come is read at once: the first poll, no timer.
        use futures::FutureExt;
        let (mut tx, mut rx) = pipe(link(0, 0.0, None));
        tx.write_all(b"hello").now_or_never().unwrap().unwrap();
        let mut got = [0u8; 5];
        let read = rx.read_exact(&mut got).now_or_never();
        assert!(matches!(read, Some(Ok(()))), "{read:?}");
        assert_eq!(&got, b"hello");
    }

    #[test]
    fn links_follow_the_placement_both_ways() {
        let (a, b, c) = (PeerId::random(), PeerId::random(), PeerId::random());
        let profile = LinkProfile {
            regions: vec!["east".into(), "west".into()],
            one_way: vec![
                vec![Duration::from_millis(1), Duration::from_millis(30)],
                vec![Duration::from_millis(31), Duration::from_millis(2)],
            ],
            jitter: 0.0,
            bytes_per_second: None,
            placement: [(a, 0), (b, 1)].into_iter().collect(),
        };
        // From b (west) to a (east).
        assert_eq!(
            profile.link(&a, &b).unwrap().one_way,
            Duration::from_millis(31)
        );
        assert_eq!(
            profile.link(&b, &a).unwrap().one_way,
            Duration::from_millis(30)
        );
        assert_eq!(
            profile.link(&b, &b).unwrap().one_way,
            Duration::from_millis(2)
        );
        assert!(profile.link(&a, &c).is_none(), "c is nowhere: no delay");
    }
}
