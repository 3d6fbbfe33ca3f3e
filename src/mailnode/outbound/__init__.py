"""Outbound mail: addresses, rendering, transports and provider events.

This package turns a sealed send into bytes and hands them to a transport, one recipient at a time, then
reads back what the provider reports. The pieces here touch no database: ``addresses`` validates and
normalises recipients, ``render`` builds RFC 5322 bytes, ``transports`` hands them over and classifies the
reply, and ``webhooks`` verifies and normalises provider events. Seal, dispatch and the tables build on them.
"""
