//! Plans (DESIGN §7.6): v1 `plan` (the plan `"main"`), v2 `plan_update` (the plan `update.plan`
//! as received, by its `planId`) and `plan_removed`. Any version.
//!
//! Mirror: `python/acp_fast/_fallback/state/plan.py`. Differences on purpose: here a plan record
//! is its JSON text (the v1 record is written out); the fallback keeps the dict.

use crate::error::{DecodeError, JsonType};
use crate::message::{Captured, Span};
use crate::scanner::Str;

use super::read::{bad, find_member, raw, text_of, update_member};
use super::records::{Action, Change, Ident, Raw, Target, Text};
use super::Store;

// The update functions here stay out of line (`#[inline(never)]`), so that `Store::apply`, the
// path of every frame, stays small.
impl Store {
    /// v1 `plan`: `{"type": "items", "planId": "main", "entries": [...]}` (+ `_meta` when not null)
    /// replaces the plan `"main"`.
    #[inline(never)]
    pub(super) fn plan(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let entries = update_member(data, update, captured, b"entries");
        let Some(e) = entries.filter(|e| e.ty == JsonType::Array) else {
            return Err(bad(
                data,
                "invalid_plan",
                "params.update.entries",
                "an array",
                entries,
                update,
            ));
        };
        let mut record = b"{\"type\":\"items\",\"planId\":\"main\",\"entries\":".to_vec();
        record.extend_from_slice(&data[e.range()]);
        if let Some(m) = update_member(data, update, captured, b"_meta").filter(|m| m.ty != JsonType::Null) {
            record.extend_from_slice(b",\"_meta\":");
            record.extend_from_slice(&data[m.range()]);
        }
        record.push(b'}');
        let id = Ident::Static("main");
        Ok(Some(self.set_plan(
            data,
            sid,
            id,
            (*b"main").into(),
            record.into_boxed_slice(),
        )))
    }

    /// v2 `plan_update`: `update.plan` (an object with a string `planId`) replaces that plan.
    #[inline(never)]
    pub(super) fn plan_update(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let plan = update_member(data, update, captured, b"plan");
        let Some(p) = plan.filter(|p| p.ty == JsonType::Object) else {
            return Err(bad(
                data,
                "invalid_plan",
                "params.update.plan",
                "an object",
                plan,
                update,
            ));
        };
        let pid = find_member(data, p, b"planId");
        let Some(s) = pid.and_then(|s| s.str()) else {
            return Err(bad(
                data,
                "invalid_plan",
                "params.update.plan.planId",
                "a string",
                pid,
                p,
            ));
        };
        Ok(Some(self.set_plan(
            data,
            sid,
            Ident::Text(s),
            text_of(data, s),
            raw(data, p),
        )))
    }

    /// `plan_removed`: the plan `update.planId` is removed (a Change only when it existed).
    #[inline(never)]
    pub(super) fn plan_removed(
        &mut self,
        data: &[u8],
        sid: Str,
        update: Span,
        captured: Option<&Captured>,
    ) -> Result<Option<Change>, DecodeError> {
        let pid = update_member(data, update, captured, b"planId");
        let Some(s) = pid.and_then(|s| s.str()) else {
            return Err(bad(
                data,
                "invalid_plan",
                "params.update.planId",
                "a string",
                pid,
                update,
            ));
        };
        let Some(slot) = self.sessions.slot(&text_of(data, sid)) else {
            return Ok(None);
        };
        self.touch_session(slot);
        let plans = &mut self.sessions.at_mut(slot).plans;
        let Some(slot) = plans.slot(&text_of(data, s)) else {
            return Ok(None);
        };
        plans.remove_slot(slot);
        plans.maybe_compact();
        Ok(Some(Change::new(
            Some(sid),
            Target::Plan,
            Ident::Text(s),
            Action::Removed,
            None,
        )))
    }

    /// Create or replace the plan `key` of session `sid`; a new one beyond the bound drops the
    /// oldest plans of the session (counted).
    fn set_plan(&mut self, data: &[u8], sid: Str, id: Ident, key: Text, record: Raw) -> Change {
        let slot = self.session_slot(data, sid);
        let max = self.limits.plans;
        let session = self.sessions.at_mut(slot);
        let plans = &mut session.plans;
        let action = match plans.slot(&key) {
            Some(s) => {
                *plans.at_mut(s) = record;
                Action::Replaced
            }
            None => {
                plans.push(key, record);
                // The bound is at least 1: the oldest plan is never the new one.
                while max.is_some_and(|max| plans.len() > max) {
                    let oldest = plans.first_slot().expect("a plan");
                    plans.remove_slot(oldest);
                    session.dropped.plans += 1;
                }
                plans.maybe_compact();
                Action::Created
            }
        };
        Change::new(Some(sid), Target::Plan, id, action, None)
    }
}
