//! A minimal PostgreSQL protocol client on a raw TCP socket, for tests
//! that send what no driver would (malformed, truncated, partial).

// Each test binary uses part of this client.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub const PROTOCOL_3_0: i32 = 196_608;

/// One backend message: its type byte and body.
#[derive(Debug, Clone)]
pub struct Msg {
    pub tag: u8,
    pub body: Vec<u8>,
}

impl Msg {
    /// An ErrorResponse's field `code` (b'C' SQLSTATE, b'M' message, b'S' severity).
    pub fn field(&self, code: u8) -> Option<String> {
        let mut rest = &self.body[..];
        while let Some((&c, tail)) = rest.split_first() {
            if c == 0 {
                break;
            }
            let end = tail.iter().position(|&b| b == 0)?;
            if c == code {
                return Some(String::from_utf8_lossy(&tail[..end]).into());
            }
            rest = &tail[end + 1..];
        }
        None
    }

    /// A DataRow's columns as text (None = NULL).
    pub fn columns(&self) -> Vec<Option<String>> {
        let b = &self.body;
        let n = i16::from_be_bytes([b[0], b[1]]) as usize;
        let mut at = 2;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let len = i32::from_be_bytes(b[at..at + 4].try_into().unwrap());
            at += 4;
            if len < 0 {
                out.push(None);
            } else {
                out.push(Some(String::from_utf8_lossy(&b[at..at + len as usize]).into()));
                at += len as usize;
            }
        }
        out
    }
}

pub struct Raw {
    pub stream: TcpStream,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream.set_nodelay(true).unwrap();
        Raw { stream }
    }

    /// Connects and completes the startup (up to the first ReadyForQuery).
    pub fn startup(addr: SocketAddr) -> Raw {
        let mut r = Raw::connect(addr);
        r.send_startup(PROTOCOL_3_0);
        let msgs = r.until_ready().expect("startup answered");
        assert!(msgs.iter().all(|m| m.tag != b'E'), "startup failed: {msgs:?}");
        r
    }

    pub fn send_startup(&mut self, version: i32) {
        let mut body = version.to_be_bytes().to_vec();
        for kv in ["user", "ndpdb", "database", "ndpdb"] {
            body.extend_from_slice(kv.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut msg = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        msg.extend(body);
        self.write(&msg);
    }

    /// Writes bytes; false when the server has closed the connection.
    pub fn write(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// A frontend message: type byte, length, body.
    pub fn send(&mut self, tag: u8, body: &[u8]) -> bool {
        let mut msg = vec![tag];
        msg.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        msg.extend_from_slice(body);
        self.write(&msg)
    }

    pub fn query(&mut self, sql: &str) -> bool {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body)
    }

    /// The next backend message; None when the connection ended. A server
    /// that neither answers nor closes within the read timeout fails the test.
    pub fn read(&mut self) -> Option<Msg> {
        let mut head = [0u8; 5];
        self.read_exact(&mut head)?;
        let len = i32::from_be_bytes(head[1..5].try_into().unwrap());
        assert!((4..1 << 30).contains(&len), "bad length {len} from the server");
        let mut body = vec![0u8; len as usize - 4];
        self.read_exact(&mut body)?;
        Some(Msg { tag: head[0], body })
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Option<()> {
        match self.stream.read_exact(buf) {
            Ok(()) => Some(()),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                panic!("the server neither answered nor closed the connection: {e}")
            }
            Err(_) => None,
        }
    }

    /// Ends what the client sends (the server reads end-of-file).
    pub fn finish_writing(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
    }

    /// Messages up to and including ReadyForQuery; None if the connection
    /// ended first.
    pub fn until_ready(&mut self) -> Option<Vec<Msg>> {
        let mut out = Vec::new();
        loop {
            let m = self.read()?;
            let done = m.tag == b'Z';
            out.push(m);
            if done {
                return Some(out);
            }
        }
    }

    /// Runs one simple query; its messages up to ReadyForQuery.
    pub fn simple(&mut self, sql: &str) -> Vec<Msg> {
        assert!(self.query(sql), "the server closed the connection");
        self.until_ready().expect("the server answered")
    }

    /// The rows of a simple query, as text.
    pub fn rows(&mut self, sql: &str) -> Vec<Vec<Option<String>>> {
        let msgs = self.simple(sql);
        if let Some(e) = msgs.iter().find(|m| m.tag == b'E') {
            panic!("{sql}: {:?}", e.field(b'M'));
        }
        msgs.iter().filter(|m| m.tag == b'D').map(Msg::columns).collect()
    }

    /// Reads until the connection ends; the messages it sent before.
    pub fn drain(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        while let Some(m) = self.read() {
            out.push(m);
        }
        out
    }
}

/// Frontend message bodies of the extended protocol.
pub fn parse(sql: &str) -> Vec<u8> {
    let mut b = vec![0u8]; // unnamed statement
    b.extend_from_slice(sql.as_bytes());
    b.push(0);
    b.extend_from_slice(&0i16.to_be_bytes());
    b
}

pub fn bind() -> Vec<u8> {
    let mut b = vec![0u8, 0u8]; // unnamed portal, unnamed statement
    b.extend_from_slice(&0i16.to_be_bytes()); // parameter formats
    b.extend_from_slice(&0i16.to_be_bytes()); // parameters
    b.extend_from_slice(&0i16.to_be_bytes()); // result formats
    b
}

pub fn execute(max_rows: i32) -> Vec<u8> {
    let mut b = vec![0u8];
    b.extend_from_slice(&max_rows.to_be_bytes());
    b
}
