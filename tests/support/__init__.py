"""Test support: real, small stand-ins for the outside world (the local Resend API server)."""
