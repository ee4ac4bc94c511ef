"""The simplex-chat adapter: its bot API shapes, WebSocket client, child process, message parts."""
