//! Faults injected on purpose, to test how drivers handle a misbehaving device.
//!
//! A rule names a command and what happens to it: it never completes (`hang`), it completes only
//! after a delay, keeping its slot busy while other commands run (`delay`), or it fails with a
//! given status and syndrome (`status`). A rule may apply a limited number of times.
//!
//! Syntax (`--fault`): `hang:<OPCODE>[:<count>]`, `delay:<OPCODE>:<ms>[:<count>]` or
//! `status:<OPCODE>:<status>[:<syndrome>[:<count>[:<skip>]]]`, where `<OPCODE>` is a name such as
//! `QUERY_ISSI` or a number such as `0x10a`; `<skip>` lets that many commands with the opcode
//! through before the rule applies (`status:CREATE_EQ:4:0:1:2` fails the third CREATE_EQ only:
//! a failure late in bring-up).

use crate::opcodes::opcode_name;

/// What a rule does to a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    /// The command never completes.
    Hang,
    /// The command executes, but its completion is held back this many milliseconds.
    Delay(u32),
    /// The command fails with this status and syndrome.
    Status(u8, u32),
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The command it applies to.
    pub opcode: u16,
    /// What it does.
    pub action: Injected,
    /// How many more times it applies; `None` for always.
    pub remaining: Option<u32>,
    /// How many commands with the opcode still pass before it applies.
    pub skip: u32,
}

/// The active rules.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Vec<Rule>,
}

fn parse_number(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("bad number {s:?}"))
}

fn parse_opcode(s: &str) -> Result<u16, String> {
    if let Ok(n) = parse_number(s) {
        return u16::try_from(n).map_err(|_| format!("opcode {s} out of range"));
    }
    (0..=u16::MAX)
        .find(|&o| opcode_name(o) == Some(s))
        .ok_or_else(|| format!("unknown command {s:?}"))
}

impl Rule {
    /// Parses the `--fault` syntax.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        let count = |s: Option<&&str>| -> Result<Option<u32>, String> {
            s.map(|c| parse_number(c).and_then(|n| u32::try_from(n).map_err(|_| "count too large".into())))
                .transpose()
        };
        match parts.as_slice() {
            ["hang", opc, rest @ ..] if rest.len() <= 1 => {
                Ok(Self { opcode: parse_opcode(opc)?, action: Injected::Hang, remaining: count(rest.first())?, skip: 0 })
            }
            ["delay", opc, ms, rest @ ..] if rest.len() <= 1 => {
                let ms = u32::try_from(parse_number(ms)?).map_err(|_| "delay too long".to_string())?;
                Ok(Self { opcode: parse_opcode(opc)?, action: Injected::Delay(ms), remaining: count(rest.first())?, skip: 0 })
            }
            ["status", opc, status, rest @ ..] if rest.len() <= 3 => {
                let status = u8::try_from(parse_number(status)?).map_err(|_| "status out of range".to_string())?;
                if status == 0 {
                    return Err("status 0 is success, not a fault".into());
                }
                if crate::command::Status::from_u8(status).is_none() {
                    return Err(format!("status {status:#x} is not a firmware command status"));
                }
                let syndrome = rest.first().map(|s| parse_number(s)).transpose()?.unwrap_or(0x0fa1_7000);
                let syndrome = u32::try_from(syndrome).map_err(|_| "syndrome out of range".to_string())?;
                Ok(Self {
                    opcode: parse_opcode(opc)?,
                    action: Injected::Status(status, syndrome),
                    remaining: count(rest.get(1))?,
                    skip: count(rest.get(2))?.unwrap_or(0),
                })
            }
            _ => Err(format!(
                "bad fault {spec:?}: expected hang:<OPCODE>[:<count>], delay:<OPCODE>:<ms>[:<count>] or status:<OPCODE>:<status>[:<syndrome>[:<count>[:<skip>]]]"
            )),
        }
    }
}

impl Faults {
    /// Adds a rule.
    pub fn add(&mut self, rule: Rule) {
        self.rules.push(rule);
    }

    /// The fault to inject for a command with `opcode`, consuming one use of the rule.
    pub fn on_command(&mut self, opcode: u16) -> Option<Injected> {
        let rule = self
            .rules
            .iter_mut()
            .find(|r| r.opcode == opcode && r.remaining != Some(0))?;
        if rule.skip > 0 {
            rule.skip -= 1;
            return None;
        }
        if let Some(n) = rule.remaining.as_mut() {
            *n -= 1;
        }
        Some(rule.action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opcodes::op;

    #[test]
    fn parse_rules() {
        assert_eq!(
            Rule::parse("hang:QUERY_ISSI").unwrap(),
            Rule {
                opcode: 0x10a,
                action: Injected::Hang,
                remaining: None,
                skip: 0
            }
        );
        assert_eq!(
            Rule::parse("status:INIT_HCA:4:0x1234:1").unwrap(),
            Rule {
                opcode: 0x102,
                action: Injected::Status(4, 0x1234),
                remaining: Some(1),
                skip: 0
            }
        );
        assert_eq!(Rule::parse("status:0x104:3").unwrap().opcode, op::ENABLE_HCA);
        assert!(Rule::parse("hang:NO_SUCH_COMMAND").is_err());
        assert!(Rule::parse("status:INIT_HCA:0").is_err());
        assert!(Rule::parse("explode:INIT_HCA").is_err());
        assert!(Rule::parse("status:INIT_HCA:999").is_err());
    }

    #[test]
    fn counted_rules_run_out() {
        let mut f = Faults::default();
        f.add(Rule::parse("hang:QUERY_ISSI:1").unwrap());
        assert_eq!(f.on_command(0x10a), Some(Injected::Hang));
        assert_eq!(f.on_command(0x10a), None);
        assert_eq!(f.on_command(0x104), None);
    }

    #[test]
    fn skipped_commands_pass_then_the_rule_applies() {
        let mut f = Faults::default();
        let r = Rule::parse("status:CREATE_EQ:4:0x77:1:2").unwrap();
        assert_eq!((r.remaining, r.skip), (Some(1), 2));
        f.add(r);
        let create_eq = 0x301;
        assert_eq!(f.on_command(create_eq), None);
        assert_eq!(f.on_command(create_eq), None);
        assert_eq!(f.on_command(create_eq), Some(Injected::Status(4, 0x77)));
        assert_eq!(f.on_command(create_eq), None);
        assert!(Rule::parse("status:CREATE_EQ:4:0:1:2:9").is_err());
    }
}
