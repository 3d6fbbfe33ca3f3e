"""The closed vocabularies several layers share, below every domain package as the tables are.

- ``send_states``: a send's states and reasons, their words, which may be retried, how recipients'
  states aggregate (seed 1 "states"; spec/outbound.md Part A).
- ``run_states``: the states a Butler run is in and the reasons the walk itself ends one with
  (spec/butler.md §6.2);
- ``mail_classes``: the mail classes (``realtime``, ``correspondence``, ``deferrable`` ...), the gates
  each obeys, and their retry and failure rules (spec/transactional.md §1).

Pure: enums, total maps over them, and parse functions that fail closed on an unknown value. They sit
here, not in ``outbound``, because the gates (``governance``), the views (``mail``, ``search``),
``retention`` and the tables (``schema``) read them and may not import a package above their own (issue 18).
"""
