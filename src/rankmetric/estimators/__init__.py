"""rankmetric.estimators"""
