"""One-time codes mailed to a person: verifying a contact address (``verification``: the pure rules;
``verification_io``: storage, sending, the API's service) and signing in to the web inbox (``signin``).

They sit above ``outbound`` and ``governance`` because a code is realtime mail the node sends itself and
the provider-availability breaker decides whether one may be asked for (issue 18: a package never imports
one above it). The contact address and the node secret they use stay in ``directory``.
"""
