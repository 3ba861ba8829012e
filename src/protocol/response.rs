//! Where does a server's response end?
//!
//! The relay forwards backend frames untouched; this state machine looks only
//! at the first bytes of each logical packet to know when the response to the
//! current command is complete, when the server asks the client for a LOCAL
//! INFILE, and what the final status flags were. It is pure, so every
//! response shape is unit-tested without a socket.

use super::consts::{MAX_FRAME, SERVER_MORE_RESULTS_EXISTS, SERVER_STATUS_CURSOR_EXISTS};
use super::packets::{parse_eof_status, parse_ok, read_lenenc, terminator_status};

/// What kind of response the command produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// COM_QUERY: OK / ERR / LOCAL INFILE request / text result sets, repeated
    /// while SERVER_MORE_RESULTS_EXISTS is set.
    Query,
    /// COM_STMT_EXECUTE: like Query with binary rows; a cursor may be opened.
    Execute,
    /// COM_STMT_PREPARE: OK with parameter and column definitions, or ERR.
    Prepare,
    /// COM_STMT_FETCH: rows then a terminator, or ERR.
    Fetch,
    /// COM_FIELD_LIST: column definitions then a terminator, or ERR.
    FieldList,
    /// One packet of any shape (OK, ERR, EOF, or COM_STATISTICS' bare string).
    Single,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the first packet of a (next) result.
    Start,
    /// Column definitions still to come, then maybe an EOF, then rows.
    Columns {
        left: u64,
    },
    /// The EOF after column definitions (classic protocol only).
    ColumnsEof,
    Rows,
    /// COM_STMT_PREPARE: parameter defs then column defs, each with an EOF in
    /// the classic protocol.
    PrepareDefs {
        params: u64,
        columns: u64,
    },
    PrepareParamsEof {
        columns: u64,
    },
    PrepareColumnsEof,
    /// Definitions terminated by EOF/OK (COM_FIELD_LIST) or rows (FETCH).
    UntilTerminator,
    Done,
}

/// The result of feeding one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More packets belong to this response.
    More,
    /// The response is complete.
    Done,
    /// The server asked for a LOCAL INFILE: the client's data packets must be
    /// relayed to the server (up to an empty packet), then the response goes on.
    LocalInfile,
}

#[derive(Debug, Clone)]
pub struct ResponseTracker {
    kind: ResponseKind,
    state: State,
    deprecate_eof: bool,
    /// The previous frame was exactly MAX_FRAME bytes: the next frame is its
    /// continuation, not a packet of its own.
    in_continuation: bool,
    /// Status flags of the last OK/EOF seen.
    pub last_status: Option<u16>,
    /// Set when the response was (or ended with) an ERR packet.
    pub error: bool,
    /// COM_STMT_PREPARE: the statement id the server assigned, with its counts.
    pub prepared: Option<PreparedInfo>,
    /// OK packet numbers of the last OK seen (affected rows, insert id).
    pub last_ok: Option<(u64, u64)>,
    /// Bytes of this response relayed to the client, headers included
    /// (maintained by the relay, for metrics).
    pub relayed_bytes: u64,
    /// Some OK/EOF of the response reported warnings: `SHOW WARNINGS`
    /// must still find them on this connection.
    pub warnings: bool,
    /// The last result of the response was a result set (not an OK), and
    /// how many rows it had: what ROW_COUNT() (-1) and FOUND_ROWS() say next.
    pub result_set: bool,
    pub rows: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreparedInfo {
    pub stmt_id: u32,
    pub columns: u16,
    pub params: u16,
}

impl ResponseTracker {
    pub fn new(kind: ResponseKind, deprecate_eof: bool) -> Self {
        let state = match kind {
            ResponseKind::Fetch | ResponseKind::FieldList => State::UntilTerminator,
            _ => State::Start,
        };
        ResponseTracker {
            kind,
            state,
            deprecate_eof,
            in_continuation: false,
            last_status: None,
            error: false,
            prepared: None,
            last_ok: None,
            warnings: false,
            relayed_bytes: 0,
            result_set: false,
            rows: 0,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The next packet is a row or the result's terminator.
    pub fn in_rows(&self) -> bool {
        self.state == State::Rows
    }

    /// After a LOCAL INFILE transfer the server answers OK or ERR, which is
    /// read like the first packet of a query result.
    pub fn resume_after_infile(&mut self) {
        self.state = State::Start;
    }

    /// Feed one frame: `frame_len` is its payload length and `payload` at least
    /// its first bytes (the whole payload for small packets).
    pub fn feed(&mut self, frame_len: usize, payload: &[u8]) -> Step {
        let continuation = self.in_continuation;
        self.in_continuation = frame_len == MAX_FRAME;
        if continuation {
            // Part of a big row or definition: never changes the state. A
            // 16 MiB packet cannot end a response.
            return Step::More;
        }
        let first = payload.first().copied();
        // A 0xFE header on a packet shorter than MAX_FRAME is an EOF (or an OK
        // standing in for it); a row starting with 0xFE would be ≥ 16 MiB.
        let is_terminator = first == Some(0xfe) && frame_len < MAX_FRAME;
        let is_err = first == Some(0xff);
        match self.state {
            State::Done => Step::Done,
            State::Start => self.on_start(payload),
            State::Columns { left } => {
                let left = left.saturating_sub(1);
                self.state = if left > 0 {
                    State::Columns { left }
                } else if self.deprecate_eof {
                    State::Rows
                } else {
                    State::ColumnsEof
                };
                Step::More
            }
            State::ColumnsEof => {
                let status = parse_eof_status(payload).unwrap_or(0);
                self.last_status = Some(status);
                self.warnings |= eof_warnings(payload);
                // An execute that opened a cursor sends no rows now: they come
                // with COM_STMT_FETCH.
                if self.kind == ResponseKind::Execute && status & SERVER_STATUS_CURSOR_EXISTS != 0 {
                    self.state = State::Done;
                    return Step::Done;
                }
                self.state = State::Rows;
                Step::More
            }
            State::Rows | State::UntilTerminator => {
                if is_err {
                    self.error = true;
                    self.state = State::Done;
                    Step::Done
                } else if is_terminator {
                    let status = terminator_status(payload, self.deprecate_eof).unwrap_or(0);
                    self.last_status = Some(status);
                    self.warnings |= if self.deprecate_eof {
                        parse_ok(payload).is_some_and(|o| o.warnings > 0)
                    } else {
                        eof_warnings(payload)
                    };
                    let more = status & SERVER_MORE_RESULTS_EXISTS != 0
                        && matches!(self.kind, ResponseKind::Query | ResponseKind::Execute);
                    self.state = if more { State::Start } else { State::Done };
                    if more {
                        Step::More
                    } else {
                        Step::Done
                    }
                } else {
                    self.rows += 1;
                    Step::More
                }
            }
            State::PrepareDefs { params, columns } => {
                if params > 0 {
                    let params = params - 1;
                    self.state = if params > 0 {
                        State::PrepareDefs { params, columns }
                    } else if !self.deprecate_eof {
                        State::PrepareParamsEof { columns }
                    } else {
                        self.after_params(columns)
                    };
                } else {
                    let columns = columns.saturating_sub(1);
                    self.state = if columns > 0 {
                        State::PrepareDefs { params: 0, columns }
                    } else if !self.deprecate_eof {
                        State::PrepareColumnsEof
                    } else {
                        State::Done
                    };
                }
                self.step()
            }
            State::PrepareParamsEof { columns } => {
                self.state = self.after_params(columns);
                self.step()
            }
            State::PrepareColumnsEof => {
                self.state = State::Done;
                Step::Done
            }
        }
    }

    fn step(&self) -> Step {
        if self.state == State::Done {
            Step::Done
        } else {
            Step::More
        }
    }

    fn after_params(&self, columns: u64) -> State {
        if columns > 0 {
            State::PrepareDefs { params: 0, columns }
        } else {
            State::Done
        }
    }

    fn on_start(&mut self, payload: &[u8]) -> Step {
        match payload.first().copied() {
            Some(0xff) => {
                self.error = true;
                self.state = State::Done;
                Step::Done
            }
            Some(0x00) if self.kind == ResponseKind::Prepare => {
                // stmt_id u32, columns u16, params u16
                let info = payload.get(1..9).map(|b| PreparedInfo {
                    stmt_id: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                    columns: u16::from_le_bytes([b[4], b[5]]),
                    params: u16::from_le_bytes([b[6], b[7]]),
                });
                match info {
                    Some(info) => {
                        self.prepared = Some(info);
                        self.state = if info.params > 0 || info.columns > 0 {
                            State::PrepareDefs {
                                params: u64::from(info.params),
                                columns: u64::from(info.columns),
                            }
                        } else {
                            State::Done
                        };
                    }
                    None => self.state = State::Done,
                }
                self.step()
            }
            Some(0x00) | Some(0xfe) if self.kind != ResponseKind::Prepare => {
                // OK (0xFE only for COM_SET_OPTION-like single answers, which
                // are not tracked here, but accept it the same way).
                let ok = parse_ok(payload);
                let status = ok.map(|o| o.status).unwrap_or(0);
                self.last_ok = ok.map(|o| (o.affected_rows, o.last_insert_id));
                self.result_set = false;
                self.warnings |= ok.is_some_and(|o| o.warnings > 0);
                self.last_status = Some(status);
                let more = status & SERVER_MORE_RESULTS_EXISTS != 0 && self.kind != ResponseKind::Single;
                self.state = if more { State::Start } else { State::Done };
                self.step()
            }
            _ if self.kind == ResponseKind::Single => {
                self.state = State::Done;
                Step::Done
            }
            Some(0xfb) if matches!(self.kind, ResponseKind::Query) => Step::LocalInfile,
            _ => match read_lenenc(payload) {
                Some((n, _)) if n > 0 => {
                    self.result_set = true;
                    self.rows = 0;
                    self.state = State::Columns { left: n };
                    Step::More
                }
                // Not a shape we know: end here rather than wait forever; the
                // session drops the backend connection when this happens.
                _ => {
                    self.error = true;
                    self.state = State::Done;
                    Step::Done
                }
            },
        }
    }
}

/// The warning count of a classic EOF packet (0xFE, warnings, status).
fn eof_warnings(payload: &[u8]) -> bool {
    payload.get(1..3).is_some_and(|w| w != [0, 0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eof(status: u16) -> Vec<u8> {
        let mut v = vec![0xfe, 0, 0];
        v.extend_from_slice(&status.to_le_bytes());
        v
    }
    fn ok(status: u16) -> Vec<u8> {
        let mut v = vec![0x00, 0, 0];
        v.extend_from_slice(&status.to_le_bytes());
        v.extend_from_slice(&[0, 0]);
        v
    }
    fn ok_fe(status: u16) -> Vec<u8> {
        let mut v = ok(status);
        v[0] = 0xfe;
        v
    }
    fn run(t: &mut ResponseTracker, packets: &[Vec<u8>]) -> Vec<Step> {
        packets.iter().map(|p| t.feed(p.len(), p)).collect()
    }
    use Step::*;

    #[test]
    fn ok_and_err() {
        let mut t = ResponseTracker::new(ResponseKind::Query, false);
        assert_eq!(run(&mut t, &[ok(2)]), vec![Done]);
        let mut t = ResponseTracker::new(ResponseKind::Query, false);
        assert_eq!(run(&mut t, &[vec![0xff, 1, 2, b'#']]), vec![Done]);
        assert!(t.error);
    }

    #[test]
    fn text_result_classic_eof() {
        let mut t = ResponseTracker::new(ResponseKind::Query, false);
        let steps = run(
            &mut t,
            &[
                vec![2],
                vec![3, b'd', b'e', b'f'],
                vec![3],
                eof(2),
                vec![1, b'a'],
                vec![0xfb],
                eof(2),
            ],
        );
        assert_eq!(steps, vec![More, More, More, More, More, More, Done]);
    }

    #[test]
    fn text_result_deprecate_eof_and_multi_results() {
        let mut t = ResponseTracker::new(ResponseKind::Query, true);
        let steps = run(
            &mut t,
            &[
                vec![1],
                vec![3],
                vec![1, b'a'],
                ok_fe(0x000a),
                ok(0x0008),
                vec![1],
                vec![3],
                ok_fe(2),
            ],
        );
        assert_eq!(steps, vec![More, More, More, More, More, More, More, Done]);
        assert_eq!(t.last_status, Some(2));
    }

    #[test]
    fn error_inside_rows_ends_response() {
        let mut t = ResponseTracker::new(ResponseKind::Query, true);
        let steps = run(&mut t, &[vec![1], vec![3], vec![1, b'a'], vec![0xff, 0, 0]]);
        assert_eq!(steps, vec![More, More, More, Done]);
    }

    #[test]
    fn big_row_continuation_is_not_a_terminator() {
        let mut t = ResponseTracker::new(ResponseKind::Query, true);
        assert_eq!(t.feed(1, &[1]), More);
        assert_eq!(t.feed(1, &[3]), More);
        assert_eq!(t.feed(MAX_FRAME, &[0xfe, 0, 0, 0, 1]), More);
        // continuation frame that happens to start with 0xFE
        assert_eq!(t.feed(5, &[0xfe, 0, 0, 2, 0]), More);
        assert_eq!(t.feed(7, &ok_fe(0)), Done);
    }

    #[test]
    fn local_infile() {
        let mut t = ResponseTracker::new(ResponseKind::Query, true);
        assert_eq!(t.feed(5, b"\xfbfile"), LocalInfile);
        t.resume_after_infile();
        assert_eq!(run(&mut t, &[ok(2)]), vec![Done]);
    }

    #[test]
    fn prepare_classic_and_deprecated() {
        let prep = |cols: u16, params: u16| {
            let mut v = vec![0, 9, 0, 0, 0];
            v.extend_from_slice(&cols.to_le_bytes());
            v.extend_from_slice(&params.to_le_bytes());
            v.extend_from_slice(&[0, 0, 0]);
            v
        };
        let mut t = ResponseTracker::new(ResponseKind::Prepare, false);
        let steps = run(&mut t, &[prep(1, 2), vec![3], vec![3], eof(2), vec![3], eof(2)]);
        assert_eq!(steps, vec![More, More, More, More, More, Done]);
        assert_eq!(t.prepared.map(|p| p.stmt_id), Some(9));

        let mut t = ResponseTracker::new(ResponseKind::Prepare, true);
        let steps = run(&mut t, &[prep(1, 2), vec![3], vec![3], vec![3]]);
        assert_eq!(steps, vec![More, More, More, Done]);

        let mut t = ResponseTracker::new(ResponseKind::Prepare, false);
        assert_eq!(run(&mut t, &[prep(0, 0)]), vec![Done]);
        let mut t = ResponseTracker::new(ResponseKind::Prepare, false);
        assert_eq!(
            run(&mut t, &[prep(0, 1), vec![3], eof(2)]),
            vec![More, More, Done]
        );
    }

    #[test]
    fn execute_with_cursor() {
        let mut t = ResponseTracker::new(ResponseKind::Execute, false);
        let steps = run(&mut t, &[vec![1], vec![3], eof(0x0042)]);
        assert_eq!(steps, vec![More, More, Done]);
        let mut t = ResponseTracker::new(ResponseKind::Fetch, false);
        let steps = run(&mut t, &[vec![0, 1], vec![0, 2], eof(0x0082)]);
        assert_eq!(steps, vec![More, More, Done]);
    }

    #[test]
    fn field_list() {
        let mut t = ResponseTracker::new(ResponseKind::FieldList, false);
        assert_eq!(run(&mut t, &[vec![3], vec![3], eof(2)]), vec![More, More, Done]);
    }

    #[test]
    fn statistics_single_bare_string() {
        let mut t = ResponseTracker::new(ResponseKind::Single, true);
        assert_eq!(run(&mut t, &[b"Uptime: 5  Threads: 1".to_vec()]), vec![Done]);
    }
}
