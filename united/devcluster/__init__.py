"""A real local Kubernetes 1.20.2 control plane for tests and ``united demo``.

* :mod:`~united.devcluster.build` provisions etcd and compiles the Kubernetes
  binaries from Debian's source package into a cache directory (once);
* :mod:`~united.devcluster.cluster` starts etcd, kube-apiserver,
  kube-controller-manager and kube-scheduler on loopback and stops them again;
* :mod:`~united.devcluster.nodes` plays the kubelets of simulated Nodes;
* :mod:`~united.devcluster.workloads` plays OpenKruise's CloneSet and Advanced
  StatefulSet controllers for the test CRDs in :mod:`~united.devcluster.crds`.

See ``docs/development/local-control-plane.md``.
"""
