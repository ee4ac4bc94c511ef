"""Web Push (issue 21): VAPID keys, browsers' subscriptions, the topics people follow,
and the event subscriber that notifies them."""
