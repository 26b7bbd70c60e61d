#!/bin/sh
# An example for `ocwatch --notify-cmd deploy/notify/notify-send.sh`: ocwatch runs it once per
# alert, without a shell, with the alert as JSON on stdin and in OCWATCH_ALERT_* variables (every
# text already bounded and stripped of control characters).
case "$OCWATCH_ALERT_KIND" in
    input|error|stale) urgency=critical ;;
    *) urgency=normal ;;
esac
body="$OCWATCH_ALERT_TEXT"
[ -n "$OCWATCH_ALERT_REPLY" ] && body="$body
$OCWATCH_ALERT_REPLY"
exec notify-send --app-name=ocwatch -u "$urgency" \
    "ocwatch $OCWATCH_ALERT_KIND: $OCWATCH_ALERT_TITLE ($OCWATCH_ALERT_SERVER)" "$body"
