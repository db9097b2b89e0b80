"""Requests from kernel traces (paper 001): requests cut out by start/end markers (markers.py) or
as units of work without them (units.py), each one's critical path across threads
(critical_path.py, path_view.py), per-request state features (features.py), outliers (DBSCAN or
isolation forest), k-means clusters of the outliers and the system-call n-grams that explain each
(outliers.py, clusters.py, ngrams.py, outlier_analysis.py), the map (map.py) and the findings."""
