"""The manager: what every kind's reconciler runs inside (informers, queue, leader election, health)."""
