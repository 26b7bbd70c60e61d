"""OpenCode V2 (2.x): `/api/info`, `/api/session`, `/api/session/active`, forms, `/api/event`."""
