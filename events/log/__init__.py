"""The event log: the contract (base.py), the registry that opens a backend by its address
(registry.py), and the backends, embedded/ and kafka/. The contract imports no backend."""
