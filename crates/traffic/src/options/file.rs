//! A flow file's text (`send --flows`, a D-ITG script): one flow per line, `#` starting
//! a comment. The file is the caller's to read; its lines are parsed here.

/// The flow lines of a flow file's `text`: each with its line number (from 1), without
/// its comment and surrounding blanks; blank and comment-only lines left out.
pub fn flow_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(n, line)| {
        let line = line.split('#').next().unwrap_or("").trim();
        (!line.is_empty()).then_some((n + 1, line))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blank_lines_are_left_out_and_lines_keep_their_numbers() {
        let text =
            "# two flows\n--tcp --rate 100pps   # the first\n\n  \t\n  --size 64 \r\n#--udp\n";
        assert_eq!(
            flow_lines(text).collect::<Vec<_>>(),
            [(2, "--tcp --rate 100pps"), (5, "--size 64")]
        );
        assert_eq!(flow_lines("").count(), 0);
        assert_eq!(flow_lines("# only\n   # comments").count(), 0);
    }
}
