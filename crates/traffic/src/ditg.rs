//! D-ITG script lines translated into dualperf flow options, so an `ITGSend` script (one
//! flow per line, D-ITG's multi-flow mode) runs in `dualperf send --ditg-script` line by
//! line.
//!
//! | D-ITG | dualperf | note |
//! |---|---|---|
//! | `-a ADDR` | (DEST) | must name DEST: one script goes to one receiver |
//! | `-T UDP\|TCP` | `--udp`/`--tcp` | ICMP, SCTP and DCCP are refused |
//! | `-C r` | `--rate r pps` | exact deadlines instead of a constant 1000/r ms gap |
//! | `-U -E -N -O -V -Y -G -W a [b]` | `--idt DIST` | D-ITG's meanings ([`crate::distribution::from_ditg_idt`]) |
//! | `-c s` | `--size s` | |
//! | `-u -e -n -o -v -y -g -w a [b]` | `--size-dist DIST` | [`crate::distribution::from_ditg_size`] |
//! | `-Ft FILE`, `-Fs FILE` | `--idt file:FILE`, `--size-dist file:FILE` | D-ITG takes `-Ft`'s first value as a start delay; here every value is a gap (use `--start`) |
//! | `-B D1 p… D2 p…` | `--on DIST --off DIST` | ON/OFF durations in ms; see below |
//! | `-t ms`, `-z n`, `-k KB` | `--duration`, `--count`, `--bytes` | a KByte taken as 1024 bytes |
//! | `-d ms` | `--start` | |
//! | `-b DS` | `--dscp DS>>2 --ecn DS&3` | the whole DS byte, as D-ITG sets it; `0xb8` and octal `0270` read as C's strtol does |
//! | `-f TTL` | `--ttl` | also the IPv6 hop limit (D-ITG leaves that at 64) |
//! | `-m owdm\|rttm` | `--meter owd\|rtt` | |
//! | `-D` | `--nodelay` | not with Telnet or DNS, whose Nagle D-ITG never turns off |
//! | `-s SEED` | `--seed` | D-ITG's seed is a real in [0, 1]: its bits become ours |
//! | `VoIP -x C -h RTP\|CRTP [-VAD]` | `--voip C --voip-header rtp\|crtp [--vad ditg]` | |
//! | `Telnet`, `DNS`, `Quake3`, `CSa`, `CSi` | `--app …` | |
//! | `-sp -rp -sa -i -j -poll -p -Sda -Sdp -Ssa -Ssp -Si` | (none) | ports, interfaces, signalling: dualperf's own |
//! | `-l -x -L -X -q` | refused | D-ITG refuses them in a script file too |
//!
//! Anything else is an error naming the option: a script is never half understood.
//!
//! `-B` is the one approximate translation. Both tools send only during ON periods, but
//! D-ITG restarts its inter-departure time at each ON start and always sends at least one
//! packet per ON period, while dualperf keeps a constant rate on its grid (a flow with
//! random gaps starts each ON period with a packet): with ON periods shorter than the
//! gap, D-ITG sends more packets than dualperf.

use crate::distribution::{from_ditg_idt, from_ditg_onoff_period, from_ditg_size, Dist};

/// One script line, translated.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    /// The flow options, in dualperf's spelling.
    pub args: Vec<String>,
    /// The line's `-a`, if it has one.
    pub dest: Option<String>,
}

/// Options dualperf has its own mechanism for, with their argument counts.
const IGNORED: [(&str, usize); 12] = [
    ("-sp", 1),
    ("-rp", 1),
    ("-sa", 1),
    ("-i", 1),
    ("-j", 1),
    ("-p", 1),
    ("-Sda", 1),
    ("-Sdp", 1),
    ("-Ssa", 1),
    ("-Ssp", 1),
    ("-Si", 1),
    ("-poll", 0),
];

/// Options D-ITG itself refuses in a script file.
const REFUSED: [&str; 5] = ["-l", "-x", "-L", "-X", "-q"];

/// An integer as C's `strtol(s, NULL, 0)` reads it: `0x` hexadecimal, a leading `0`
/// octal, else decimal.
fn c_int(s: &str) -> Option<u64> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// Arguments of a distribution letter (`C`, `U`, … upper- or lower-case).
fn dist_arity(letter: char) -> Option<usize> {
    match letter.to_ascii_uppercase() {
        'C' | 'E' | 'O' => Some(1),
        'U' | 'N' | 'V' | 'Y' | 'G' | 'W' => Some(2),
        _ => None,
    }
}

/// A script line dualperf cannot run, and why (naming the D-ITG option).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DitgError(pub String);

/// Translate one `ITGSend` script line.
pub fn translate(line: &str) -> Result<Translated, DitgError> {
    translate_line(line).map_err(DitgError)
}

fn translate_line(line: &str) -> Result<Translated, String> {
    let mut script = Line {
        tokens: line.split_whitespace().collect(),
        i: 0,
        out: Translated {
            args: Vec::new(),
            dest: None,
        },
    };
    while let Some(&tok) = script.tokens.get(script.i) {
        if REFUSED.contains(&tok) {
            return Err(format!(
                "D-ITG option {tok} is not allowed in a script file (nor by ITGSend); dualperf's logs are --log"
            ));
        }
        if let Some(&(_, n)) = IGNORED.iter().find(|(name, _)| *name == tok) {
            script.take(script.i, n, tok)?;
            script.i += 1 + n;
            continue;
        }
        script.handle_option(tok)?;
    }
    let mut out = script.out;
    // D-ITG leaves Nagle on for Telnet and DNS whatever -D says.
    let nagle_kept = out
        .args
        .windows(2)
        .any(|w| w[0] == "--app" && (w[1] == "telnet" || w[1] == "dns"));
    if nagle_kept {
        out.args.retain(|a| a != "--nodelay");
    }
    Ok(out)
}

/// One script line being read: its tokens, where the reading is, and what it became.
struct Line<'a> {
    tokens: Vec<&'a str>,
    i: usize,
    out: Translated,
}

/// `v` as numbers, or which of them is not one.
fn numbers(v: &[&str], opt: &str) -> Result<Vec<f64>, String> {
    v.iter()
        .map(|s| {
            s.parse::<f64>()
                .map_err(|_| format!("D-ITG option {opt}: '{s}' is not a number"))
        })
        .collect()
}

impl<'a> Line<'a> {
    /// The `n` arguments after the token at `at`.
    fn take(&self, at: usize, n: usize, opt: &str) -> Result<Vec<&'a str>, String> {
        self.tokens
            .get(at + 1..at + 1 + n)
            .map(<[&str]>::to_vec)
            .ok_or_else(|| format!("D-ITG option {opt} needs {n} argument(s)"))
    }

    /// The one argument of the option at the reading point.
    fn one(&self, opt: &str) -> Result<&'a str, String> {
        self.take(self.i, 1, opt).map(|v| v[0])
    }

    fn push(&mut self, parts: &[&str]) {
        self.out.args.extend(parts.iter().map(|s| (*s).to_owned()));
    }

    /// Translate the option `tok` at the reading point and step past it.
    fn handle_option(&mut self, tok: &str) -> Result<(), String> {
        match tok {
            "-a" => self.out.dest = Some(self.one(tok)?.to_owned()),
            "-T" => match self.one(tok)?.to_ascii_uppercase().as_str() {
                "UDP" => self.push(&["--udp"]),
                "TCP" => self.push(&["--tcp"]),
                other => return Err(format!("D-ITG -T {other}: dualperf sends UDP and TCP only")),
            },
            "-t" | "-d" => {
                let ms = numbers(&[self.one(tok)?], tok)?[0];
                let flag = if tok == "-t" { "--duration" } else { "--start" };
                self.push(&[flag, &format!("{ms}ms")]);
            }
            "-z" => {
                let count = self.one(tok)?;
                self.push(&["--count", count]);
            }
            "-k" => {
                let kb = numbers(&[self.one(tok)?], tok)?[0];
                self.push(&["--bytes", &format!("{}", (kb * 1024.0).round())]);
            }
            "-b" => {
                let arg = self.one(tok)?;
                let ds = c_int(arg)
                    .and_then(|v| u8::try_from(v).ok())
                    .ok_or_else(|| format!("D-ITG -b takes a DS byte 0-255, not '{arg}'"))?;
                self.push(&["--dscp", &(ds >> 2).to_string()]);
                if ds & 3 != 0 {
                    self.push(&["--ecn", &(ds & 3).to_string()]);
                }
            }
            "-f" => {
                let arg = self.one(tok)?;
                let ttl = c_int(arg).ok_or_else(|| format!("D-ITG -f takes a TTL, not '{arg}'"))?;
                self.push(&["--ttl", &ttl.to_string()]);
            }
            "-m" => {
                let meter = self.one(tok)?;
                self.push(&["--meter", meter]);
            }
            "-D" => {
                self.push(&["--nodelay"]);
                self.i += 1;
                return Ok(());
            }
            "-s" => {
                let seed = numbers(&[self.one(tok)?], tok)?[0];
                self.push(&["--seed", &seed.to_bits().to_string()]);
            }
            "-Ft" | "-Fs" => {
                let flag = if tok == "-Ft" { "--idt" } else { "--size-dist" };
                let file = self.one(tok)?;
                self.push(&[flag, &format!("file:{file}")]);
            }
            "-C" => {
                let r = numbers(&[self.one(tok)?], tok)?[0];
                if !(r.is_finite() && r > 0.0) {
                    return Err(format!("D-ITG -C {r}: the rate must be above 0"));
                }
                self.push(&["--rate", &format!("{r}pps")]);
            }
            "-B" => return self.handle_onoff(),
            "VoIP" => return self.handle_voip(),
            "Telnet" | "DNS" | "Quake3" | "CSa" | "CSi" => {
                self.push(&["--app", &tok.to_ascii_lowercase()]);
                self.i += 1;
                return Ok(());
            }
            _ => return self.handle_distribution(tok),
        }
        // Every option above that returned no sooner takes one argument.
        self.i += 2;
        Ok(())
    }

    /// `-B` with its two distributions, the on and the off period.
    fn handle_onoff(&mut self) -> Result<(), String> {
        let mut parts = Vec::new();
        let mut j = self.i + 1;
        for _ in 0..2 {
            let letter = self
                .tokens
                .get(j)
                .and_then(|t| t.chars().next().filter(|_| t.len() == 1))
                .ok_or("D-ITG -B takes two distributions: -B C 1000 C 2000")?;
            let n = dist_arity(letter)
                .ok_or_else(|| format!("D-ITG -B: unknown distribution '{letter}'"))?;
            let args = numbers(&self.take(j, n, "-B")?, "-B")?;
            let d = from_ditg_onoff_period(letter, &args).map_err(|e| format!("D-ITG -B: {e}"))?;
            parts.push(d);
            j += 1 + n;
        }
        self.push(&[
            "--on",
            &parts[0].to_string(),
            "--off",
            &parts[1].to_string(),
        ]);
        self.i = j;
        Ok(())
    }

    /// `VoIP` and the options of its own that follow it (`-x`, `-h`, `-VAD`).
    fn handle_voip(&mut self) -> Result<(), String> {
        self.push(&["--voip", "g711.1"]);
        let at = self.out.args.len() - 1;
        self.i += 1;
        while let Some(&t) = self.tokens.get(self.i) {
            match t {
                "-x" => {
                    self.out.args[at] = self.one("VoIP")?.to_owned();
                    self.i += 2;
                }
                "-h" => {
                    let header = self.one("VoIP")?.to_ascii_lowercase();
                    self.push(&["--voip-header", &header]);
                    self.i += 2;
                }
                "-VAD" => {
                    self.push(&["--vad", "ditg"]);
                    self.i += 1;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// A distribution option: an upper-case letter is inter-departure times, `-c` a
    /// constant size, another lower-case letter a size distribution.
    fn handle_distribution(&mut self, tok: &str) -> Result<(), String> {
        let letter = tok
            .strip_prefix('-')
            .filter(|l| l.len() == 1)
            .and_then(|l| l.chars().next());
        let Some(n) = letter.and_then(dist_arity) else {
            return Err(format!("D-ITG option '{tok}' is not understood"));
        };
        let letter = letter.unwrap_or_default();
        let args = numbers(&self.take(self.i, n, tok)?, tok)?;
        self.i += 1 + n;
        if letter == 'c' {
            self.push(&["--size", &format!("{}", args[0])]);
            return Ok(());
        }
        let (flag, d): (&str, Result<Dist, _>) = if letter.is_ascii_uppercase() {
            ("--idt", from_ditg_idt(letter, &args))
        } else {
            ("--size-dist", from_ditg_size(letter, &args))
        };
        let d = d.map_err(|e| format!("D-ITG {tok}: {e}"))?;
        self.push(&[flag, &d.to_string()]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        translate(line).unwrap().args
    }

    #[test]
    fn generic_flows_translate_option_by_option() {
        let t = translate(
            "-a 127.0.0.1 -rp 9501 -T UDP -C 100 -c 512 -t 10000 -b 184 -f 7 -m rttm -poll",
        )
        .unwrap();
        assert_eq!(t.dest.as_deref(), Some("127.0.0.1"));
        assert_eq!(
            t.args,
            [
                "--udp",
                "--rate",
                "100pps",
                "--size",
                "512",
                "--duration",
                "10000ms",
                "--dscp",
                "46",
                "--ttl",
                "7",
                "--meter",
                "rttm"
            ]
        );
        // The DS byte's low bits are the ECN field.
        assert_eq!(args("-b 185"), ["--dscp", "46", "--ecn", "1"]);
        assert_eq!(
            args("-T TCP -D -z 50 -k 2 -d 500"),
            [
                "--tcp",
                "--nodelay",
                "--count",
                "50",
                "--bytes",
                "2048",
                "--start",
                "500ms"
            ]
        );
    }

    #[test]
    fn distributions_keep_ditgs_meanings() {
        // -E is a rate (mean gap 1000/r ms); -W's arguments are (scale, shape).
        assert_eq!(
            args("-E 50 -u 100 300"),
            ["--idt", "exp:20", "--size-dist", "uniform:100,300"]
        );
        let w = args("-W 2 1.5");
        let d: Dist = w[1].parse().unwrap();
        assert_eq!(
            d,
            Dist::Weibull {
                shape: 1.5,
                scale: 2.0
            }
        );
        assert_eq!(args("-Ft gaps.txt"), ["--idt", "file:gaps.txt"]);
        let b = args("-B C 1000 E 2000");
        assert_eq!(b[0], "--on");
        assert_eq!(b[2], "--off");
        assert_eq!(
            b[1].parse::<Dist>().unwrap(),
            Dist::Constant { value: 1000.0 }
        );
        assert_eq!(
            b[3].parse::<Dist>().unwrap(),
            Dist::Exponential { mean: 2000.0 }
        );
    }

    #[test]
    fn presets_translate_to_their_models() {
        assert_eq!(
            args("-a ::1 VoIP -x G.729.3 -h CRTP -VAD -t 5000"),
            [
                "--voip",
                "G.729.3",
                "--voip-header",
                "crtp",
                "--vad",
                "ditg",
                "--duration",
                "5000ms"
            ]
        );
        assert_eq!(args("VoIP"), ["--voip", "g711.1"]);
        assert_eq!(args("-T TCP DNS"), ["--tcp", "--app", "dns"]);
        assert_eq!(args("CSa"), ["--app", "csa"]);
    }

    #[test]
    fn ditg_quirks_carry_over() {
        // strtol base 0 for -b and -f; Nagle stays on for Telnet and DNS.
        assert_eq!(args("-b 0xb8 -f 010"), ["--dscp", "46", "--ttl", "8"]);
        assert_eq!(args("-D -T TCP DNS"), ["--tcp", "--app", "dns"]);
        assert_eq!(args("Telnet -D"), ["--app", "telnet"]);
        // Signalling options are dualperf's own; -x outside VoIP is not swallowed.
        assert_eq!(args("-Ssa ::1 -Si lo -C 5"), ["--rate", "5pps"]);
        assert!(translate("VoIP -t 5000 -x G.729.2")
            .unwrap_err()
            .0
            .contains("-x"));
        assert!(translate("-L -T TCP")
            .unwrap_err()
            .0
            .contains("not allowed"));
    }

    #[test]
    fn what_dualperf_cannot_do_is_an_error_naming_it() {
        for (line, want) in [
            ("-T ICMP", "UDP and TCP only"),
            ("-Q", "'-Q' is not understood"),
            ("-C", "needs 1 argument"),
            ("-C x", "not a number"),
            ("-C 0", "above 0"),
            ("-B C 1000", "two distributions"),
            ("-b 300", "DS byte"),
            ("-W -1 2", "D-ITG -W"),
        ] {
            let e = translate(line).unwrap_err().0;
            assert!(e.contains(want), "{line}: {e}");
        }
    }
}
