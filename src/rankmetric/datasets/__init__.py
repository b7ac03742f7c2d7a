"""rankmetric.datasets"""
