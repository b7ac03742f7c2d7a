"""rankmetric.bench"""
