//! STAMP (RFC 8762, RFC 8972): the Session-Reflector of `recv --stamp` and the
//! Session-Sender of `send --stamp`, over the wire formats of `wire::stamp`.
pub(crate) mod reflector;
pub(crate) mod sender;
