//! A small HTTP/1.1 client that does what the attacks need and a real
//! client would not: raw bytes on the wire, a chosen source address (so
//! that per-client limits and fair queues see several clients), a small
//! receive buffer (so that a client that never reads stops the server's
//! writes at once instead of after megabytes of kernel buffering), and
//! every read bounded by a deadline.
//!
//! A response that never came reads as code 0 ([`Response::code`]), with
//! [`Response::end`] saying whether the server closed the connection or
//! the wait ran out.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The address the probe and other well-behaved clients connect from;
/// attacks use 127.0.0.1 unless they say otherwise.
pub(crate) const BYSTANDER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// The most of a body read (a runaway stream stops there).
const BODY_CAP: usize = 256 << 20;

/// How a response ended, when it did not end as its framing said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Read in full.
    Complete,
    /// The server closed the connection (before any answer, or mid-body).
    Closed,
    /// The wait ran out.
    TimedOut,
}

/// A response, or the lack of one.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    /// The status code; 0 when no status line arrived.
    pub(crate) code: u16,
    /// Header names lowercased, in the order received.
    pub(crate) headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub(crate) body: Vec<u8>,
    /// How the response ended.
    pub(crate) end: End,
}

impl Response {
    fn none(end: End) -> Response {
        Response {
            code: 0,
            headers: Vec::new(),
            body: Vec::new(),
            end,
        }
    }

    /// The first header of that (lowercase) name.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON, if it is.
    pub(crate) fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// A short description for messages: the code, how it ended, the
    /// start of the body.
    pub(crate) fn brief(&self) -> String {
        let text: String = self.text().chars().take(240).collect();
        format!("{} ({:?}) {text}", self.code, self.end)
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for connecting")
    })
}

/// Connects to `addr`, from `from` if given, with a receive buffer of
/// `rcvbuf` bytes if given (set before connecting, so that the window the
/// server sees is that small). std can do neither, tokio's `TcpSocket`
/// can; the stream comes back blocking.
pub(crate) fn connect_with(
    addr: SocketAddr,
    from: Option<Ipv4Addr>,
    rcvbuf: Option<u32>,
) -> io::Result<TcpStream> {
    if from.is_none() && rcvbuf.is_none() {
        return TcpStream::connect_timeout(&addr, Duration::from_secs(10));
    }
    let rt = runtime();
    let _entered = rt.enter();
    let socket = tokio::net::TcpSocket::new_v4()?;
    if let Some(size) = rcvbuf {
        socket.set_recv_buffer_size(size)?;
    }
    if let Some(ip) = from {
        socket.bind(SocketAddr::new(ip.into(), 0))?;
    }
    let stream = rt
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(10), socket.connect(addr)).await
        })
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
    let stream = stream.into_std()?;
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Connects from 127.0.0.1 (panics if it cannot: the suite cannot go on).
pub(crate) fn connect(addr: SocketAddr) -> TcpStream {
    connect_with(addr, None, None).unwrap_or_else(|e| panic!("connect {addr}: {e}"))
}

/// A `GET` request with `Connection: close` and the extra headers.
pub(crate) fn request(path: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// Sends `bytes` on a new connection and reads one response, within
/// `wait` in all. A write the server cut short (it answered and closed
/// before taking everything) is not an error: the answer is read anyway.
pub(crate) fn exchange_from(
    addr: SocketAddr,
    from: Option<Ipv4Addr>,
    bytes: &[u8],
    wait: Duration,
) -> Response {
    let stream = match connect_with(addr, from, None) {
        Ok(s) => s,
        Err(_) => return Response::none(End::Closed),
    };
    let _ = stream.set_write_timeout(Some(wait));
    let _ = (&stream).write_all(bytes);
    let head_only = bytes.starts_with(b"HEAD ");
    read_response(
        &mut BufReader::new(stream),
        head_only,
        Instant::now() + wait,
    )
}

/// [`exchange_from`] 127.0.0.1.
pub(crate) fn exchange(addr: SocketAddr, bytes: &[u8], wait: Duration) -> Response {
    exchange_from(addr, None, bytes, wait)
}

/// `GET path` on a connection of its own, within 10 s.
pub(crate) fn get(addr: SocketAddr, path: &str) -> Response {
    exchange(addr, &request(path, &[]), Duration::from_secs(10))
}

/// `GET path` with extra headers.
pub(crate) fn get_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
    exchange(addr, &request(path, headers), Duration::from_secs(10))
}

fn set_wait(r: &mut BufReader<TcpStream>, deadline: Instant) -> io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline"));
    }
    r.get_ref().set_read_timeout(Some(left))
}

fn line(r: &mut BufReader<TcpStream>, deadline: Instant) -> io::Result<Vec<u8>> {
    set_wait(r, deadline)?;
    let mut out = Vec::new();
    // A line longer than 64 KiB is not HTTP framing: stop there.
    r.by_ref().take(64 * 1024).read_until(b'\n', &mut out)?;
    if out.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
    }
    Ok(out)
}

fn end_of(e: &io::Error) -> End {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => End::TimedOut,
        _ => End::Closed,
    }
}

/// Reads a response's status line and headers (skipping `1xx` interim
/// responses).
pub(crate) fn read_head(r: &mut BufReader<TcpStream>, deadline: Instant) -> Response {
    loop {
        let status = match line(r, deadline) {
            Ok(l) => l,
            Err(e) => return Response::none(end_of(&e)),
        };
        let status = String::from_utf8_lossy(&status).into_owned();
        let code = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let mut headers = Vec::new();
        loop {
            let l = match line(r, deadline) {
                Ok(l) => l,
                Err(e) => {
                    return Response {
                        code,
                        headers,
                        body: Vec::new(),
                        end: end_of(&e),
                    };
                }
            };
            let l = String::from_utf8_lossy(&l);
            let l = l.trim_end_matches(['\r', '\n']);
            if l.is_empty() {
                break;
            }
            if let Some((name, value)) = l.split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        if (100..200).contains(&code) {
            continue;
        }
        return Response {
            code,
            headers,
            body: Vec::new(),
            end: End::Complete,
        };
    }
}

/// Reads one response (framed by `Content-Length`, chunked, or the
/// connection's end), by `deadline`.
pub(crate) fn read_response(
    r: &mut BufReader<TcpStream>,
    head_only: bool,
    deadline: Instant,
) -> Response {
    let mut resp = read_head(r, deadline);
    if resp.code == 0 || resp.end != End::Complete || head_only {
        return resp;
    }
    let chunked = resp
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let length = resp
        .header("content-length")
        .and_then(|v| v.parse::<usize>().ok());
    let got = if chunked {
        read_chunked(r, &mut resp.body, deadline)
    } else if let Some(n) = length {
        read_exact_by(r, &mut resp.body, n.min(BODY_CAP), deadline)
    } else if resp.code == 204 || resp.code == 304 {
        Ok(())
    } else {
        read_to_end_by(r, &mut resp.body, deadline)
    };
    if let Err(e) = got {
        resp.end = end_of(&e);
    }
    resp
}

fn read_exact_by(
    r: &mut BufReader<TcpStream>,
    out: &mut Vec<u8>,
    n: usize,
    deadline: Instant,
) -> io::Result<()> {
    let mut buf = [0u8; 64 * 1024];
    let want = out.len() + n;
    while out.len() < want {
        set_wait(r, deadline)?;
        let k = (want - out.len()).min(buf.len());
        let got = r.read(&mut buf[..k])?;
        if got == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
        }
        out.extend_from_slice(&buf[..got]);
    }
    Ok(())
}

fn read_to_end_by(
    r: &mut BufReader<TcpStream>,
    out: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<()> {
    let mut buf = [0u8; 64 * 1024];
    while out.len() < BODY_CAP {
        set_wait(r, deadline)?;
        let got = r.read(&mut buf)?;
        if got == 0 {
            return Ok(());
        }
        out.extend_from_slice(&buf[..got]);
    }
    Ok(())
}

/// Reads one chunk into `out`; `Ok(false)` after the last chunk.
fn read_chunk(
    r: &mut BufReader<TcpStream>,
    out: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<bool> {
    let size = line(r, deadline)?;
    let size = String::from_utf8_lossy(&size);
    let size = size.trim().split(';').next().unwrap_or("");
    let size = usize::from_str_radix(size, 16)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
    if size == 0 {
        // Trailers, up to the empty line.
        while !line(r, deadline)?.trim_ascii().is_empty() {}
        return Ok(false);
    }
    read_exact_by(r, out, size, deadline)?;
    line(r, deadline)?;
    Ok(out.len() < BODY_CAP)
}

fn read_chunked(
    r: &mut BufReader<TcpStream>,
    out: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<()> {
    while read_chunk(r, out, deadline)? {}
    Ok(())
}

/// Drains a connection until the server closes it or `deadline`; returns
/// the bytes read and whether it closed.
pub(crate) fn drain(stream: &mut TcpStream, deadline: Instant) -> (usize, bool) {
    let mut buf = [0u8; 64 * 1024];
    let mut total = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return (total, false);
        }
        match stream.read(&mut buf) {
            Ok(0) => return (total, true),
            Ok(n) => total += n,
            Err(e) if end_of(&e) == End::TimedOut => return (total, false),
            // Reset: closed too.
            Err(_) => return (total, true),
        }
    }
}

/// A watch being read: its response head, then its JSON lines as they
/// come.
#[derive(Debug)]
pub(crate) struct WatchStream {
    /// The response head (and, if it was not a `200`, its body).
    pub(crate) head: Response,
    reader: BufReader<TcpStream>,
    pending: Vec<u8>,
    ended: bool,
}

impl WatchStream {
    /// Sends `GET path` (keep-alive) from `from` and reads the head
    /// (within 10 s). A non-`200` answer's body is read into `head`.
    pub(crate) fn open(
        addr: SocketAddr,
        path: &str,
        from: Option<Ipv4Addr>,
    ) -> io::Result<WatchStream> {
        let mut stream = connect_with(addr, from, None)?;
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n")?;
        let mut reader = BufReader::new(stream);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut head = read_head(&mut reader, deadline);
        let mut ended = head.code != 200;
        if head.code != 0 && head.code != 200 {
            head = {
                let length = head
                    .header("content-length")
                    .and_then(|v| v.parse::<usize>().ok());
                let mut body = Vec::new();
                let _ = match length {
                    Some(n) => read_exact_by(&mut reader, &mut body, n.min(BODY_CAP), deadline),
                    None => read_chunked(&mut reader, &mut body, deadline),
                };
                Response { body, ..head }
            };
            ended = true;
        }
        Ok(WatchStream {
            head,
            reader,
            pending: Vec::new(),
            ended,
        })
    }

    /// The next line of the stream: `Ok(None)` once the stream ended,
    /// an error of kind `TimedOut` if none came by `deadline`.
    pub(crate) fn next_line(&mut self, deadline: Instant) -> io::Result<Option<String>> {
        loop {
            if let Some(at) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                return Ok(Some(String::from_utf8_lossy(&line).trim().to_owned()));
            }
            if self.ended {
                return Ok(None);
            }
            match read_chunk(&mut self.reader, &mut self.pending, deadline) {
                Ok(true) => {}
                Ok(false) => self.ended = true,
                Err(e) if end_of(&e) == End::TimedOut => {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "no line in time"));
                }
                Err(_) => self.ended = true,
            }
        }
    }

    /// Reads until the stream ends or `deadline`: the lines read, and
    /// whether it ended.
    pub(crate) fn read_until_end(&mut self, deadline: Instant) -> (Vec<String>, bool) {
        let mut lines = Vec::new();
        loop {
            match self.next_line(deadline) {
                Ok(Some(l)) => lines.push(l),
                Ok(None) => return (lines, true),
                Err(_) => return (lines, false),
            }
        }
    }
}
