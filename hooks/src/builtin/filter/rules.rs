//! A filter's rule set: its rules split into terminal (accept, drop: the
//! classifier's) and `count` rules, in config order, and what lookahead
//! needs of them.

use super::config::{parse_action, ACTION_KEYS, MATCH_KEYS};
use super::{Action, Filter};
use crate::lookahead::{answerable_ahead, state_only, Lookahead};
use crate::rules::{parse_match, MatchRule};
use crate::rules::{CT_ESTABLISHED, CT_NEW, CT_RELATED};
use crate::{BuildContext, HookArgs, HookBuildError};

/// A filter's rules, terminal (accept, drop: in the classifier) and
/// `count`.
#[derive(Default)]
pub(super) struct Rules {
    pub(super) terminal: Vec<MatchRule>,
    /// Action of each terminal rule, in classifier order.
    pub(super) actions: Vec<Action>,
    /// Config index of each terminal rule (for ordering against count rules).
    pub(super) terminal_index: Vec<usize>,
    /// Count rules: config index and match.
    pub(super) count_rules: Vec<(usize, MatchRule)>,
    /// The terminal rules without a state condition, which lookahead
    /// answers at ingress (where a key has no state), and the answer each
    /// stands for (1 + its terminal index).
    pub(super) ahead: Vec<MatchRule>,
    pub(super) ahead_answer: Vec<u32>,
    /// Per state (new, established, related): 1 + the index of the first
    /// terminal rule on that state and nothing else; 0 if none.
    pub(super) state_first: [u32; 3],
}

impl Rules {
    /// What lookahead needs (`ahead`, `ahead_answer`, `state_first`), once
    /// the rules are parsed.
    fn prepare_ahead(&mut self) {
        for (i, r) in self.terminal.iter().enumerate() {
            if r.ct_states == 0 {
                self.ahead.push(r.clone());
                self.ahead_answer.push(i as u32 + 1);
            }
        }
        for (s, bits) in [CT_NEW, CT_ESTABLISHED, CT_RELATED].into_iter().enumerate() {
            let takes = |r: &MatchRule| r.ct_states & bits != 0 && state_only(r);
            self.state_first[s] = self
                .terminal
                .iter()
                .position(takes)
                .map_or(0, |i| i as u32 + 1);
        }
    }

    /// The answer (1 + terminal index, 0 none) of an answer of the `ahead`
    /// rules.
    #[inline(always)]
    pub(super) fn of_ahead(&self, answer: u32) -> u32 {
        if self.ahead.len() == self.terminal.len() {
            // No state rules: the same rules, the same answers.
            return answer;
        }
        answer
            .checked_sub(1)
            .and_then(|i| self.ahead_answer.get(i as usize))
            .copied()
            .unwrap_or(0)
    }

    /// 1 + the index of the first terminal rule that matches on nothing but
    /// the connection state and takes `bits` (one `CT_*` bit); 0 if none.
    #[inline(always)]
    pub(super) fn state_first(&self, bits: u8) -> u32 {
        match bits {
            CT_NEW => self.state_first[0],
            CT_ESTABLISHED => self.state_first[1],
            CT_RELATED => self.state_first[2],
            _ => 0,
        }
    }
}

/// The earlier of two classifier answers (0: no match).
pub(super) fn first_of(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

pub(super) fn parse_rules(
    args: &HookArgs,
    cx: &BuildContext,
    stateful: bool,
) -> Result<Rules, HookBuildError> {
    let mut rules = Rules::default();
    for (i, t) in args.rules.iter().enumerate() {
        let rule = parse_match(t, i, cx, &MATCH_KEYS, &ACTION_KEYS)?;
        if rule.ct_states != 0 && !stateful {
            return Err(HookBuildError::rule(
                i,
                "state",
                "connection state needs a stateful filter; add stateful = true to the hook",
            ));
        }
        match parse_action(t, i)? {
            Some(action) => {
                rules.actions.push(action);
                rules.terminal.push(rule);
                rules.terminal_index.push(i);
            }
            None => rules.count_rules.push((i, rule)),
        }
    }
    rules.prepare_ahead();
    Ok(rules)
}

impl Lookahead for Filter {
    /// The terminal rules, when nothing but them and the connection state
    /// decides a plain packet: no count rules, no rule on mark, class or
    /// output port, and rules on states have no other condition (at
    /// ingress they never match: the key there has no state; here
    /// `Rules::state_first` answers for them).
    fn egress_rules(&self) -> Option<&[MatchRule]> {
        let r = &self.rules;
        (r.count_rules.is_empty() && answerable_ahead(&r.terminal)).then_some(&r.ahead[..])
    }

    fn carried_in(&self, slot: usize) {
        let _ = self.slot.set(slot);
    }
}
