"""Test-support helpers: real sshd servers on loopback and a headless browser."""
