"""Call-tree diagnosis from request tracing (paper 002, CloudDiag): call trees from spans and their
categories by shape (trees.py), Robust PCA (rpca.py), the anomalous (method, replica) pairs ranked
(clouddiag.py), the comparison with a reference span set (compare.py), findings and display rows."""
