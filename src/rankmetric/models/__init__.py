"""rankmetric.models"""
