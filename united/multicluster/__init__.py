"""Multi-cluster subsets: ``Cluster`` objects name member clusters a subset's child may live in.

The modules named after data (``model``, ``health``, ``identity``, ``gc``) are
pure, like the rest of the core: no client, no aiohttp, so they are tested without a cluster and
the CLI can use them offline. ``resource`` names the REST resource (it imports the kube client).
"""
